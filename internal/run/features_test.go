package run

import (
	"context"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/vu"
)

// A plan needing a feature the loop does not list goes to the goroutine
// engine under auto, and --engine loop refuses it naming the feature:
// here the loop is made to lack plain requests, as it lacks any feature
// added to the program's needs (vu.Program.Needs) and not to
// vu.LoopSupports.
func TestFeatureTheLoopLacksRunsOnGoroutines(t *testing.T) {
	needLoop(t)
	srv, seen := countingServer(t, nil)
	src := `
target: ` + srv.URL + `
scenarios: {s: {steps: [{name: get, get: /}]}}
load: {stages: [{duration: 200ms, users: 1}]}
`
	res, err := Run(context.Background(), mustPlan(t, src), Options{})
	if err != nil || res.Run.Engine != EngineLoop {
		t.Fatalf("a plain GET under auto ran %q (%v), want the loop", res.Run.Engine, err)
	}
	full := vu.LoopSupports
	t.Cleanup(func() { vu.LoopSupports = full })
	vu.LoopSupports = full.Without(vu.FeatRequest)

	before := seen.Load()
	_, err = Run(context.Background(), mustPlan(t, src), Options{Engine: EngineLoop})
	if err == nil || !strings.Contains(err.Error(), vu.FeatRequest.String()) {
		t.Errorf("forced loop: err = %v, want one naming %q", err, vu.FeatRequest)
	}
	if n := seen.Load() - before; n != 0 {
		t.Errorf("the refused run sent %d requests", n)
	}
	res, err = Run(context.Background(), mustPlan(t, src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Engine != EngineGoroutines || res.Totals.Requests == 0 {
		t.Errorf("auto ran %q with %d requests, want goroutines sending some", res.Run.Engine, res.Totals.Requests)
	}
}
