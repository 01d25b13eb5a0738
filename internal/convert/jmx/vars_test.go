package jmx

import (
	"os"
	"strings"
	"testing"
)

func newConv() *conv {
	return &conv{
		vars: map[string]string{"host": "${TARGET_HOST:-example.com}"}, captures: map[string]string{"token": "token", "a.b": "a_b"},
		columns: map[string]string{"user": "users.user"}, env: map[string]string{}, seen: map[string]bool{},
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		m    mode
		want string
	}{
		{"${__P(threads,10)}", modePlain, "${THREADS:-10}"},
		{"${__P(target.host)}", modePlain, "${TARGET_HOST:-1}"},                   // __P's default is 1
		{"${__property(base.url,,http://x)}", modePlain, "${BASE_URL:-http://x}"}, // third argument
		{"${__property(env)}", modePlain, "${ENV:-env}"},                          // the name, as JMeter does
		{"http://${host}/", modeTemplate, "http://${TARGET_HOST:-example.com}/"},
		{"Bearer ${token} for ${user}", modeTemplate, "Bearer {{ token }} for {{ data.users.user }}"},
		{"${a.b}", modeTemplate, "{{ a_b }}"},
		{"${token}", modePlain, "$${token}"}, // no captures in the target
		{"${nobody}", modeTemplate, "$${nobody}"},
		{"${__time(yyyy)}", modeTemplate, "$${__time(yyyy)}"},
		{"${__time()}-${__UUID}-${__threadNum}", modeTemplate, "{{ now_ms }}-{{ uuid }}-{{ vu }}"},
		{"${__Random(1,9,r)}", modeTemplate, "{{ rand_int(1, 9) }}"},
		{"cost: ${", modeTemplate, "cost: $${"},
		{"{{x}}", modeTemplate, lbraceRef + "x}}"},
		{"${__P(a,${b})}", modePlain, "${A:-}"},
	} {
		c := newConv()
		if got := c.text(tc.in, tc.m, "here"); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	c := newConv()
	c.text("${nobody} ${__time(yyyy)}", modeTemplate, "TestPlan/x")
	if len(c.res.Skipped) != 2 || !strings.HasPrefix(c.res.Skipped[0], "TestPlan/x: the variable ${nobody}") {
		t.Errorf("listed %q", c.res.Skipped)
	}
}

func TestSplitCall(t *testing.T) {
	fn, args := splitCall(`__P(a\,b,${__P(c,d)},e)`)
	if fn != "__P" || strings.Join(args, "|") != "a,b|${__P(c,d)}|e" {
		t.Errorf("got %s %q", fn, args)
	}
}

func TestNames(t *testing.T) {
	if got := envName("target.host-1"); got != "TARGET_HOST_1" {
		t.Errorf("envName: %s", got)
	}
	if got := envName("1x"); got != "_X" {
		t.Errorf("envName: %s", got)
	}
	if got := ident("9 lives"); got != "_9_lives" {
		t.Errorf("ident: %s", got)
	}
}

func TestNotAPlan(t *testing.T) {
	for in, want := range map[string]string{
		"<html></html>":                     "the root element is <html>",
		"<jmeterTestPlan":                   "XML error at line 1",
		"<jmeterTestPlan></jmeterTestPlan>": "no <hashTree>",
		`<jmeterTestPlan><hashTree><TestPlan testclass="TestPlan" testname="p"/><hashTree/></hashTree></jmeterTestPlan>`: "nothing to convert: no enabled thread group",
	} {
		if _, _, err := Convert([]byte(in), Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// A JMeter variable named like one of the plan's template names (vu,
// uuid, data, ...) is captured under another name: the plan refused the
// capture name, and the conversion failed. One that only begins like
// one (rand_integer) keeps its name.
func TestReservedCaptureNames(t *testing.T) {
	data, err := os.ReadFile("testdata/floor.jmx")
	if err != nil {
		t.Fatal(err)
	}
	read := func(f string) ([]byte, error) { return os.ReadFile("testdata/" + f) }
	for _, n := range []string{"tenant", "vu", "iter", "uuid", "now_ms", "rand_int", "vars", "data", "status", "my-var", "rand_integer"} {
		d := strings.ReplaceAll(string(data), ">party<", ">"+n+"<")
		d = strings.ReplaceAll(d, "${party}", "${"+n+"}")
		out, _, err := Convert([]byte(d), Options{ReadFile: read})
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		name := ident(n)
		if reserved[name] {
			name = "v_" + name
		}
		mustContain(t, string(out), "  "+name+": {json: parties.1.id}", `"partyId": "{{ `+name+` }}"`)
	}
}
