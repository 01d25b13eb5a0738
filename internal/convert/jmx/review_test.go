package jmx

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The defects a review on real .jmx files found (issue 30 §6), each on a
// small plan written here in the shape of the file it came from.

// tinyPlan is a .jmx with the test plan's user variables (name, value
// pairs) and one thread group of users over 10 s holding body.
func tinyPlan(vars []string, group, body string) []byte {
	var args strings.Builder
	for i := 0; i+1 < len(vars); i += 2 {
		fmt.Fprintf(&args, `<elementProp name="%s" elementType="Argument"><stringProp name="Argument.name">%s</stringProp><stringProp name="Argument.value">%s</stringProp></elementProp>`,
			vars[i], vars[i], xmlText(vars[i+1]))
	}
	if group == "" {
		group = `<ThreadGroup testclass="ThreadGroup" testname="Users" enabled="true">
<stringProp name="ThreadGroup.num_threads">2</stringProp><stringProp name="ThreadGroup.ramp_time">0</stringProp>
<boolProp name="ThreadGroup.scheduler">true</boolProp><stringProp name="ThreadGroup.duration">10</stringProp></ThreadGroup>`
	}
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2"><hashTree>
<TestPlan testclass="TestPlan" testname="Review" enabled="true">
<elementProp name="TestPlan.user_defined_variables" elementType="Arguments"><collectionProp name="Arguments.arguments">` + args.String() + `</collectionProp></elementProp>
</TestPlan>
<hashTree>` + group + `<hashTree>` + body + `</hashTree></hashTree></hashTree></jmeterTestPlan>`)
}

func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// get is an HTTP GET sampler with its children (extractors, assertions).
func get(name, domain, path, children string) string {
	return `<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="` + name + `" enabled="true">
<stringProp name="HTTPSampler.domain">` + xmlText(domain) + `</stringProp><stringProp name="HTTPSampler.protocol">https</stringProp>
<stringProp name="HTTPSampler.path">` + xmlText(path) + `</stringProp><stringProp name="HTTPSampler.method">GET</stringProp>
</HTTPSamplerProxy><hashTree>` + children + `</hashTree>`
}

func convertTiny(t *testing.T, data []byte, files map[string]string) (string, Result) {
	t.Helper()
	out, res, err := Convert(data, Options{Source: "review.jmx", ReadFile: func(f string) ([]byte, error) {
		if s, ok := files[f]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}})
	if err != nil {
		t.Fatalf("convert: %v\nskipped: %q\nnotes: %q", err, res.Skipped, res.Notes)
	}
	return string(out), res
}

// F1: a server the plan cannot name as a host is ${TARGET}, the
// functions that read the environment are ${NAME} references, and a
// server from a CSV column is named in each step's URL.
func TestServerNames(t *testing.T) {
	for _, tc := range []struct {
		name, domain string
		vars         []string
		want         []string
	}{
		{"placeholder", "{my-app-endpoint}", nil, []string{"target: ${TARGET}\n", "get: /a\n", "# Set before running (no default): TARGET\n"}},
		{"prose", "Enter the URL of your endpoint", nil, []string{"target: ${TARGET}\n"}},
		{"empty", "", nil, []string{"target: ${TARGET}\n", "no server name here or in HTTP Request Defaults"}},
		{"env", "${BASE_URL_1}", []string{"BASE_URL_1", "${__env(webapp,,)}"}, []string{"target: https://${webapp}\n", "no default): webapp\n"}},
		{"env default", "${host}", []string{"host", "${__env(HOST_NAME,,example.org)}"}, []string{"target: https://${HOST_NAME:-example.org}\n"}},
		{"beanshell", "${__BeanShell( System.getenv(\"SBNamespace\") )}", nil, []string{"target: https://${SBNamespace}\n"}},
		{"secret", "${__GetSecret(endpoint)}", nil, []string{"target: https://${ENDPOINT}\n", `ENDPOINT (the Azure Load Testing secret "endpoint")`}},
		{"unknown script", "${__groovy(vars.get('h'))}", nil, []string{"target: ${TARGET}\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := convertTiny(t, tinyPlan(tc.vars, "", get("a", tc.domain, "/a", "")), nil)
			mustContain(t, out, tc.want...)
			if strings.Contains(out, "please report") {
				t.Errorf("internal-bug wording for user input:\n%s", out)
			}
		})
	}
	csv := `<CSVDataSet testclass="CSVDataSet" testname="Sites" enabled="true"><stringProp name="filename">sites.csv</stringProp>
<stringProp name="variableNames"></stringProp></CSVDataSet><hashTree/>`
	out, _ := convertTiny(t, tinyPlan(nil, "", csv+get("a", "${Host}", "/a", "")), map[string]string{"sites.csv": "Host,Id\nexample.org,1\n"})
	mustContain(t, out, "get: https://{{ data.sites.Host }}/a\n")
	if strings.Contains(out, "target:") {
		t.Errorf("a target for a server per row:\n%s", out)
	}
}

func regex(name, re, match string) string {
	return `<RegexExtractor testclass="RegexExtractor" testname="` + name + `" enabled="true">
<stringProp name="RegexExtractor.refname">` + name + `</stringProp><stringProp name="RegexExtractor.regex">` + xmlText(re) + `</stringProp>
<stringProp name="RegexExtractor.template">$1$</stringProp><stringProp name="RegexExtractor.default">NONE</stringProp>
<stringProp name="RegexExtractor.match_number">` + match + `</stringProp></RegexExtractor><hashTree/>`
}

// F2: an extractor the plan cannot take registers no capture (a later
// reference stays text, the plan loads), and match 0 (random) is taken
// as the first.
func TestExtractorMatchNumbers(t *testing.T) {
	body := get("list", "bugs.example.org", "/list", regex("bugId", `id=(\d+)`, "0")+regex("all", `n=(\d+)`, "-1")) +
		get("show", "bugs.example.org", "/show/${bugId}/${all}", "")
	out, res := convertTiny(t, tinyPlan(nil, "", body), nil)
	mustContain(t, out, "bugId: {regex: id=(\\d+)}", "get: /show/{{ bugId }}/$${all}\n",
		"match number 0 (a random match): the plan takes the first")
	mustContain(t, strings.Join(res.Skipped, "\n"), "match number -1", "the variable ${all}")
}

// F4: a property's default is trimmed, as JMeter trims it.
func TestPropertyDefaultTrimmed(t *testing.T) {
	group := `<ThreadGroup testclass="ThreadGroup" testname="Users" enabled="true">
<stringProp name="ThreadGroup.num_threads">${__P(threadCount, 30)}</stringProp><stringProp name="ThreadGroup.ramp_time">0</stringProp>
<boolProp name="ThreadGroup.scheduler">true</boolProp><stringProp name="ThreadGroup.duration">10</stringProp></ThreadGroup>`
	out, res := convertTiny(t, tinyPlan(nil, group, get("a", "example.org", "/", "")), nil)
	mustContain(t, out, "users: '${THREADCOUNT:-30}'", "THREADCOUNT=30\n")
	mustContain(t, strings.Join(res.Env, " "), "THREADCOUNT=30")
}

// F5: a set that names its variables and skips the file's first line
// maps them by position to the file's header columns.
func TestCSVColumnsByPosition(t *testing.T) {
	csv := `<CSVDataSet testclass="CSVDataSet" testname="Websites" enabled="true"><stringProp name="filename">websites.csv</stringProp>
<stringProp name="variableNames">CustomerId,CustomerName,Url</stringProp><boolProp name="ignoreFirstLine">true</boolProp></CSVDataSet><hashTree/>`
	body := csv + get("a", "example.org", "/c/${CustomerId}/${CustomerName}/${Url}", "")
	out, _ := convertTiny(t, tinyPlan(nil, "", body), map[string]string{"websites.csv": "\xef\xbb\xbfCustomerId,Name,URL\n1,Contoso,www.contoso.com\n"})
	mustContain(t, out, "get: /c/{{ data.websites.CustomerId }}/{{ data.websites.Name }}/{{ data.websites.URL }}\n")
	// Without the file the names are the set's, and the header says to
	// check the file's header row.
	out, _ = convertTiny(t, tinyPlan(nil, "", body), nil)
	mustContain(t, out, "{{ data.websites.Url }}", `check that it is "CustomerId,CustomerName,Url"`)
}

func assertion(name, field, extra string, typ int, tests ...string) string {
	var ts strings.Builder
	for i, s := range tests {
		fmt.Fprintf(&ts, `<stringProp name="%d">%s</stringProp>`, i, xmlText(s))
	}
	return `<ResponseAssertion testclass="ResponseAssertion" testname="` + name + `" enabled="true">
<collectionProp name="Asserion.test_strings">` + ts.String() + `</collectionProp>
<stringProp name="Assertion.test_field">` + field + `</stringProp><intProp name="Assertion.test_type">` + fmt.Sprint(typ) + `</intProp>` +
		extra + `</ResponseAssertion><hashTree/>`
}

// F6: "ignore status" with a response code is the step's expected
// status; F9: an assertion on a variable is listed, not made a body check.
func TestStatusAndVariableAssertions(t *testing.T) {
	ignore := `<boolProp name="Assertion.assume_success">true</boolProp>`
	onVar := `<stringProp name="Assertion.scope">variable</stringProp><stringProp name="Scope.variable">csrf</stringProp>`
	body := get("missing", "example.org", "/nope", assertion("404 expected", "Assertion.response_code", ignore, 8, "404")) +
		get("page", "example.org", "/page", assertion("var check", "Assertion.response_data", onVar, 2, "NOTFOUND"))
	out, res := convertTiny(t, tinyPlan(nil, "", body), nil)
	mustContain(t, out, "get: /nope\n        redirects: 0\n        expect:\n          status: 404\n")
	if strings.Contains(out, "body_contains") {
		t.Errorf("a variable's assertion checks the body:\n%s", out)
	}
	mustContain(t, strings.Join(res.Skipped, "\n"), `"var check": checks the variable "csrf", not the response`)
}

// F9: an extractor at the thread group's level applies to every sampler
// in JMeter, which sets its default where nothing matches: it is no
// capture on every step (each without a match would fail).
func TestGroupLevelExtractor(t *testing.T) {
	body := regex("csrf", `name="csrf" value="([^"]+)"`, "1") +
		get("home", "example.org", "/", "") + get("news", "example.org", "/news", "")
	out, res := convertTiny(t, tinyPlan(nil, "", body), nil)
	if strings.Contains(out, "capture:") {
		t.Errorf("a group-level extractor is a capture:\n%s", out)
	}
	mustContain(t, strings.Join(res.Skipped, "\n"), `RegexExtractor "csrf": applies to every sampler under TestPlan/ThreadGroup "Users"`)
	// Over one sampler it is that sampler's capture.
	out, _ = convertTiny(t, tinyPlan(nil, "", regex("csrf", `value="([^"]+)"`, "1")+get("home", "example.org", "/", "")), nil)
	mustContain(t, out, "capture:\n          csrf: {regex:")
}

// F7: the Azure sample's Stepping Thread Group (250 threads, 50 more
// every 30 s, each step's users started over a rampUp of 10 s, 120 s of
// flight, 25 stopped every 10 s): in the plugin a step lasts period +
// rampUp and a burst of 0 is a first step of 50, so every user runs at
// 170 s and the stop starts at 290 s.
func TestSteppingGroupRampUp(t *testing.T) {
	group := `<kg.apc.jmeter.threads.SteppingThreadGroup testclass="kg.apc.jmeter.threads.SteppingThreadGroup" testname="Stepping" enabled="true">
<stringProp name="ThreadGroup.num_threads">250</stringProp><stringProp name="Threads initial delay">0</stringProp>
<stringProp name="Start users count">50</stringProp><stringProp name="Start users count burst">0</stringProp>
<stringProp name="Start users period">30</stringProp><stringProp name="Stop users count">25</stringProp>
<stringProp name="Stop users period">10</stringProp><stringProp name="flighttime">120</stringProp><stringProp name="rampUp">10</stringProp>
</kg.apc.jmeter.threads.SteppingThreadGroup>`
	out, _ := convertTiny(t, tinyPlan(nil, group, get("a", "example.org", "/", "")), nil)
	mustContain(t, out, `  stages:
    - {duration: 10s, users: 0 -> 50}
    - {duration: 30s, users: 50}
    - {duration: 10s, users: 50 -> 100}
    - {duration: 30s, users: 100}
    - {duration: 10s, users: 100 -> 150}
    - {duration: 30s, users: 150}
    - {duration: 10s, users: 150 -> 200}
    - {duration: 30s, users: 200}
    - {duration: 10s, users: 200 -> 250}
    - {duration: 120s, users: 250}
    - {duration: 100s, users: 250 -> 0, steps: 10}
`)
	var full, stop float64
	for _, s := range regexpStages.FindAllStringSubmatch(out, -1) {
		d, _ := strconv.ParseFloat(s[1], 64)
		if stop == 0 && strings.HasSuffix(s[2], "250") && !strings.Contains(s[2], "->") {
			stop = full + d
		}
		if stop == 0 {
			full += d
		}
	}
	if full != 170 || stop != 290 {
		t.Errorf("every user runs from %vs, the stop starts at %vs; want 170 and 290", full, stop)
	}
}

var regexpStages = regexp.MustCompile(`\{duration: (\d+)s, users: '?([^,'}]+)'?`)

func timer(class, delay, rng string) string {
	return `<` + class + ` testclass="` + class + `" testname="t" enabled="true"><stringProp name="ConstantTimer.delay">` + delay +
		`</stringProp><stringProp name="RandomTimer.range">` + rng + `</stringProp></` + class + `><hashTree/>`
}

// F8: a Flow Control Action that pauses is think time: its child timers
// (JMeter's "Think Time" template) and its own pause; F10: a zero timer
// is no think step.
func TestFlowControlActionThinks(t *testing.T) {
	action := func(name, action, ms, children string) string {
		return `<TestAction testclass="TestAction" testname="` + name + `" enabled="true"><intProp name="ActionProcessor.action">` + action +
			`</intProp><intProp name="ActionProcessor.target">0</intProp><stringProp name="ActionProcessor.duration">` + ms + `</stringProp></TestAction><hashTree>` + children + `</hashTree>`
	}
	body := get("a", "example.org", "/a", timer("ConstantTimer", "0", "")) +
		action("Think Time", "1", "0", timer("UniformRandomTimer", "1000", "100.0")) +
		get("b", "example.org", "/b", "") +
		action("Pause", "1", "2000", "") +
		get("c", "example.org", "/c", "") +
		action("Stop", "0", "0", "")
	out, res := convertTiny(t, tinyPlan(nil, "", body), nil)
	mustContain(t, out, "redirects: 0\n      - {think: 1s..1100ms}\n      - name: b\n", "redirects: 0\n      - {think: 2s}\n      - name: c\n")
	if strings.Contains(out, "think: 0s") {
		t.Errorf("a zero timer is a think step:\n%s", out)
	}
	mustContain(t, strings.Join(res.Skipped, "\n"), `TestAction "Stop": a Flow Control Action that stops or restarts`)
}

// F10: HTTP Request Defaults give a sampler without a path theirs, and
// add their parameters to a sampler's own, as JMeter does; a data file
// outside the plan's directory needs --allow-files, which the header says.
func TestDefaultsPathAndParameters(t *testing.T) {
	defaults := `<ConfigTestElement testclass="ConfigTestElement" testname="Defaults" enabled="true">
<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">
<elementProp name="lang" elementType="HTTPArgument"><stringProp name="Argument.name">lang</stringProp><stringProp name="Argument.value">en</stringProp></elementProp>
<elementProp name="q" elementType="HTTPArgument"><stringProp name="Argument.name">q</stringProp><stringProp name="Argument.value">default</stringProp></elementProp>
</collectionProp></elementProp>
<stringProp name="HTTPSampler.domain">example.org</stringProp><stringProp name="HTTPSampler.path">/home</stringProp></ConfigTestElement><hashTree/>`
	search := `<HTTPSamplerProxy testclass="HTTPSamplerProxy" testname="search" enabled="true">
<elementProp name="HTTPsampler.Arguments" elementType="Arguments"><collectionProp name="Arguments.arguments">
<elementProp name="q" elementType="HTTPArgument"><stringProp name="Argument.name">q</stringProp><stringProp name="Argument.value">shoes</stringProp></elementProp>
</collectionProp></elementProp>
<stringProp name="HTTPSampler.path">/search</stringProp><stringProp name="HTTPSampler.protocol">https</stringProp></HTTPSamplerProxy><hashTree/>`
	out, _ := convertTiny(t, tinyPlan(nil, "", defaults+get("home", "", "", "")+search), nil)
	mustContain(t, out, "- name: home\n        get: /home\n        query:\n          lang: en\n          q: default\n",
		"get: /search\n        query:\n          q: shoes\n          lang: en\n        redirects: 0\n")

	csv := `<CSVDataSet testclass="CSVDataSet" testname="Sites" enabled="true"><stringProp name="filename">sites.csv</stringProp>
<stringProp name="variableNames">Id</stringProp><boolProp name="ignoreFirstLine">true</boolProp></CSVDataSet><hashTree/>`
	res, _, err := Convert(tinyPlan(nil, "", csv+get("a", "example.org", "/${Id}", "")), Options{DataDir: "../in/az"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(res), "../in/az/sites.csv is outside the plan's directory: run the plan with --allow-files")
}

// F10: a set naming its variables over a file without a header row (the
// podcast sample's shows.csv) converts, and says the plan does not load
// until the file has one.
func TestCSVWithoutHeaderSaysSo(t *testing.T) {
	csv := `<CSVDataSet testclass="CSVDataSet" testname="Shows" enabled="true"><stringProp name="filename">shows.csv</stringProp>
<stringProp name="variableNames">Name,Id</stringProp></CSVDataSet><hashTree/>`
	_, res := convertTiny(t, tinyPlan(nil, "", csv+get("a", "example.org", "/show/${Id}", "")), nil)
	mustContain(t, strings.Join(res.Notes, "\n"), `add the row "Name,Id" to shows.csv (the plan does not load without it)`)
}
