package vu

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

func compileWhole(t *testing.T, yaml string) *Program {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte("target: http://127.0.0.1:9\n"+yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// Pace, waves and a plan of connections only are needs like any other:
// a driver that does not list them refuses the plan with the words users
// saw before they were features, and one that lists them does not.
func TestPlanWideNeedsAreFeatures(t *testing.T) {
	const get = "scenarios: {s: {steps: [{get: /}]}}\n"
	for _, c := range []struct {
		yaml string
		want Feature
		text string
	}{
		{get + "load: {pace: {exponential: 1s}, stages: [{duration: 1s, users: 1}]}\n", FeatPace, "users are paced"},
		{"tenants: {count: 2, waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 1s}]}\n" +
			"scenarios: {s: {per_tenant: 1, steps: [{get: /}]}}\nload: {stages: [{duration: 2s, users: 2}]}\n", FeatWaves, "the plan has waves"},
		{"scenarios: {s: {users: 1, websocket: {url: /x, steps: [{send: hi}]}}}\nload: {stages: [{duration: 1s, users: 1}]}\n", FeatNoRequests, "the plan sends no requests"},
	} {
		prog := compileWhole(t, c.yaml)
		loop := Driver{Supports: LoopSupports}
		if why := prog.Refusal(loop); why != c.text {
			t.Errorf("%s: refusal %q, want %q", c.yaml, why, c.text)
		}
		all := Driver{Supports: LoopSupports | NewFeatureSet(c.want, FeatConnections)}
		if why := prog.Refusal(all); why != "" {
			t.Errorf("%s: a driver listing %v refused it: %q", c.yaml, c.want, why)
		}
	}
}

// A driver that is absent names why before anything else; the address
// check comes last, only for a plan every other need of which is met, and
// a driver listing FeatAnyAddress is not asked.
func TestDriverAbsenceAndAddressCheck(t *testing.T) {
	prog := compileWhole(t, "scenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n")
	if why := prog.Refusal(Driver{Absent: "not on this system"}); why != "not on this system" {
		t.Errorf("absent driver: %q", why)
	}
	var asked []string
	check := func(addr string) string { asked = append(asked, addr); return `host "x" resolves to 2 addresses` }
	if why := prog.Refusal(Driver{Supports: LoopSupports, CheckAddr: check}); why != `host "x" resolves to 2 addresses` {
		t.Errorf("address refusal %q", why)
	}
	if len(asked) != 1 || asked[0] != "127.0.0.1:9" {
		t.Errorf("the check was asked %v, want the one endpoint", asked)
	}
	if why := prog.Refusal(Driver{Supports: LoopSupports | NewFeatureSet(FeatAnyAddress), CheckAddr: check}); why != "" || len(asked) != 1 {
		t.Errorf("a driver dialing any address: %q, asked %v", why, asked)
	}
	thinks := compileWhole(t, "scenarios: {s: {steps: [{get: /}, {think: 1s}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n")
	if why := thinks.Refusal(Driver{Supports: LoopSupports, CheckAddr: check}); !strings.HasSuffix(why, FeatNonRequestStep.String()) || len(asked) != 1 {
		t.Errorf("a thinking plan: %q, asked %v", why, asked)
	}
}
