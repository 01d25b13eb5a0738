package vu

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

func compileFor(t *testing.T, yaml string) *Program {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte("target: http://127.0.0.1:9\n"+yaml+"load: {stages: [{duration: 1s, users: 1}]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// Each thing the loop cannot do is a feature the program needs and the
// loop does not list, named in the refusal with where it is needed.
func TestLoopRefusesEachFeatureItLacks(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want Feature
	}{
		{"http: {version: h2c}\nscenarios: {s: {steps: [{get: /}]}}\n", FeatH2C},
		{"http: {connection: per-request}\nscenarios: {s: {steps: [{get: /}]}}\n", FeatNoKeepAlive},
		{"scenarios: {s: {steps: [{get: /}, {think: 1s}]}}\n", FeatNonRequestStep},
		{"scenarios: {s: {steps: [{get: \"/?u={{ vu }}\"}]}}\n", FeatTemplatedURL},
		{"scenarios: {s: {steps: [{get: \"http://127.0.0.{{ vu }}:9/\"}]}}\n", FeatDynamicOrigin},
		{"scenarios: {s: {steps: [{get: \"https://127.0.0.1:9/\"}]}}\n", FeatHTTPSNegotiated},
		{"http: {version: h2}\nscenarios: {s: {steps: [{get: \"https://127.0.0.1:9/\"}]}}\n", FeatHTTPSNegotiated},
		{"scenarios: {s: {steps: [{get: /, capture: {id: {json: id}}}]}}\n", FeatCapture},
		{"scenarios: {s: {steps: [{get: /, expect: {body_contains: ok}}]}}\n", FeatBodyCheck},
		{"scenarios: {s: {steps: [{get: /, headers: {X-U: \"{{ vu }}\"}}]}}\n", FeatTemplatedHeader},
		{"scenarios: {s: {steps: [{get: /}, {get: \"http://127.0.0.2:9/\"}]}}\n", FeatManyEndpoints},
	} {
		prog := compileFor(t, c.yaml)
		why := prog.LoopIneligible()
		if why == "" || !strings.HasSuffix(why, c.want.String()) {
			t.Errorf("%s: ineligible %q, want it to end %q", c.yaml, why, c.want)
		}
		found := false
		for _, n := range prog.Needs() {
			found = found || n.Feature == c.want
		}
		if !found {
			t.Errorf("%s: needs %v lack %v", c.yaml, prog.Needs(), c.want)
		}
	}
}

// The allow-list at work: a plan the loop runs today is refused, with the
// feature named, by a loop that does not list a feature the plan needs, as
// a feature added to the program without being added to the loop's set
// would be. The goroutine engine then runs it (run's engine tests).
func TestFeatureMissingFromDriverRefusesPlan(t *testing.T) {
	prog := compileFor(t, "scenarios: {s: {steps: [{name: get, get: /}]}}\n")
	if why := prog.LoopIneligible(); why != "" {
		t.Fatalf("a plain GET is ineligible: %s", why)
	}
	why := prog.Unsupported(LoopSupports.Without(FeatRequest))
	if why != `scenario "s" step "get": it sends HTTP requests` {
		t.Errorf("refusal %q", why)
	}
}

// https under http.version http/1.1 runs on the loop (the handshake on a
// goroutine, the exchanges on the loop); a driver without TLS refuses it.
func TestLoopRunsHTTPSOverHTTP1(t *testing.T) {
	prog := compileFor(t, "http: {version: http/1.1}\nscenarios: {s: {steps: [{name: get, get: \"https://127.0.0.1:9/\"}]}}\n")
	if why := prog.LoopIneligible(); why != "" {
		t.Fatalf("https over http/1.1 is ineligible: %s", why)
	}
	if why := prog.Unsupported(LoopSupports.Without(FeatHTTPS)); !strings.HasSuffix(why, FeatHTTPS.String()) {
		t.Errorf("refusal %q", why)
	}
}

// Every feature says why a driver without it refuses a plan.
func TestEveryFeatureHasAText(t *testing.T) {
	for f := range numFeatures {
		if f.String() == "" {
			t.Errorf("feature %d has no text", f)
		}
	}
}
