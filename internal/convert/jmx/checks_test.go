package jmx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Extractors as captures, assertions as expect, timers as think steps,
// CSV data sets as data sources; what the plan cannot say, listed.
func TestChecks(t *testing.T) {
	out, res := convertFile(t, "checks.jmx")
	mustContain(t, out,
		// CSV: names given (no header row: a note), ";" (a note),
		// recycle off and stop on: unique; names from the header row.
		"accounts: {file: data/accounts.csv, pick: unique}\n",
		"cities: {file: cities.csv, pick: sequential}\n",
		"user: '{{ data.accounts.user }}'",
		"get: /cities/{{ data.cities.city }}/weather",
		`add the row "user,pass" to data/accounts.csv`,
		`data/accounts.csv is delimited by ";"`,
		"shareMode.thread: each thread read the file on its own",
		// Regex, boundary and JSON extractors.
		"session: {regex: 'session=\"([^\"]+)\"'}\n",
		"csrf: {regex: '(?s)name=\"csrf\" value=\"(.*?)\"'}\n",
		"first_id: {json: items.0.id}\n",
		// A Duration Assertion as the timeout; the thread group's status
		// assertion (200) and the sampler's (200 or 201) both hold: 200.
		"timeout: 1500ms\n",
		"expect:\n          status: 200\n          body_contains: Welcome\n          json:\n            status: active\n            count: 3\n",
		// Timers: uniform (offset..offset+range) before every sampler in
		// scope; Gaussian as normal; a property's default.
		"- {think: 200ms..500ms}\n      - name: login\n",
		"- {think: 200ms..500ms}\n      - {think: {normal: 1s, sd: 250ms}}\n      - {think: 50ms}\n      - name: city\n",
	)
	skipped := strings.Join(res.Skipped, "\n")
	for _, want := range []string{
		`RegexExtractor "second": match number 2`,
		`RegexExtractor "two groups": template "$1$-$2$"`,
		`RegexExtractor "from headers": extracts from the response headers, not the body`,
		`JSONPostProcessor "ids": JSON path "$.items[*].id" for all_ids`,
		`JSONPostProcessor "ids": JSON path "$..id" for deep`,
		`ResponseAssertion "Welcome": text "${user}"`,
		`ResponseAssertion "Not error": a negated (NOT) assertion`,
		`JSONPathAssertion "exists": checks only that $.token exists`,
		`JSONPathAssertion "regex": expected value "a.*" is a regex`,
	} {
		if !strings.Contains(skipped, `TestPlan/ThreadGroup "Users"/HTTPSamplerProxy "login"/`+want) {
			t.Errorf("not listed: %s\nlisted:\n%s", want, skipped)
		}
	}
	if len(res.Skipped) != 9 {
		t.Errorf("%d listed, want 9:\n%s", len(res.Skipped), skipped)
	}
}

func TestJSONPath(t *testing.T) {
	for in, want := range map[string]string{
		"$.a":              "a",
		"$.a.b[0].c":       "a.b.0.c",
		"$['a']['b-c'][2]": "a.b-c.2",
		`$["x"]`:           "x",
		"$.items[*].id":    "",
		"$..id":            "",
		"$.a[?(@.b)]":      "",
		"a.b":              "",
		"$":                "",
	} {
		if got, ok := jsonPath(in); got != want || ok != (want != "") {
			t.Errorf("jsonPath(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

// A data file is named relative to the .jmx; the plan written elsewhere
// names it relative to itself.
func TestDataDir(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "checks.jmx"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := Convert(data, Options{DataDir: "../tests", ReadFile: func(f string) ([]byte, error) {
		return os.ReadFile(filepath.Join("testdata", f))
	}})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(out), "accounts: {file: ../tests/data/accounts.csv, pick: unique}", "cities: {file: ../tests/cities.csv,")
}

// A column whose name a template cannot read is listed, and the plan
// still loads.
func TestOddColumnName(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "floor.jmx"))
	if err != nil {
		t.Fatal(err)
	}
	d := strings.Replace(string(data), `<stringProp name="variableNames"></stringProp>`, `<stringProp name="variableNames">voter-id,district_id</stringProp>`, 1)
	out, res, err := Convert([]byte(d), Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(out), `column "voter-id"`)
	mustContain(t, strings.Join(res.Skipped, "\n"), `Voters CSV": column "voter-id" (a template reads letters, digits and _): not converted`)
}
