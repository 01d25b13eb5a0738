package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/vu"
)

// safetyNet is how long a test waits for a run that should end by itself;
// it only catches a run that never ends, never measures one.
const safetyNet = 90 * time.Second

// startRun runs p on the engine directly, past the checks Run makes before
// the load (preflight, population against the open-files limit): these
// tests are about populations and rates that pass such checks and still
// cannot be started in time. It returns the runner and the run's outcome.
func startRun(t *testing.T, ctx context.Context, p *plan.Plan) (*runner, <-chan *result.Result) {
	t.Helper()
	prog, err := vu.Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(p, prog, p.Target, Options{Interval: time.Second, CheckpointEvery: time.Hour})
	t.Cleanup(r.shared.Close)
	out := make(chan *result.Result, 1)
	go func() {
		res, err := r.run(ctx)
		if err != nil {
			t.Error(err)
		}
		out <- res
	}()
	return r, out
}

func waitResult(t *testing.T, out <-chan *result.Result) *result.Result {
	t.Helper()
	select {
	case res := <-out:
		return res
	case <-time.After(safetyNet):
		t.Fatalf("the run did not end within %v", safetyNet)
		return nil
	}
}

// A population far beyond what can start in a stage ends with its stage:
// the start loop looks at the clock between batches of users instead of
// starting every user of the target first. The users think before any
// request, so the test sends nothing and holds no connection.
func TestHugePopulationEndsWithItsStage(t *testing.T) {
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - think: 1h
      - get: /
load: {grace: 1s, stages: [{duration: 200ms, users: 1000000000}]}
`)
	r, out := startRun(t, context.Background(), p)
	res := waitResult(t, out)
	started := r.nextID.Load()
	t.Logf("started %d users in a 200ms stage", started)
	if started == 0 || started >= 1_000_000_000 {
		t.Fatalf("started %d users; want some, and fewer than the target", started)
	}
	if res.Run.Partial || res.Run.MaxUsers == 0 {
		t.Errorf("partial %v (%s), max_users %d", res.Run.Partial, res.Run.PartialReason, res.Run.MaxUsers)
	}
	if res.Totals.Requests != 0 || seen.Load() != 0 {
		t.Errorf("requests %d, server saw %d; every user was still thinking", res.Totals.Requests, seen.Load())
	}
}

// The first Ctrl-C stops a ramp whose first control tick already asks for
// 100 million users: the run returns without having started them, and no
// user starts once it has returned.
func TestCtrlCStopsHugeRamp(t *testing.T) {
	srv, _ := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - think: 1h
      - get: /
load: {grace: 1s, stages: [{duration: 1h, users: 100000000 -> 1000000000}]}
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, out := startRun(t, ctx, p)
	deadline := time.Now().Add(safetyNet)
	for r.nextID.Load() < 1000 {
		if time.Now().After(deadline) {
			t.Fatal("the ramp never started 1000 users")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	res := waitResult(t, out)
	after := r.nextID.Load()
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "interrupted") {
		t.Errorf("partial %v reason %q, want an interrupted run", res.Run.Partial, res.Run.PartialReason)
	}
	t.Logf("started %d users before the stop took hold", after)
	if after >= 100_000_000 {
		t.Errorf("started %d users: the first tick's whole batch despite Ctrl-C", after)
	}
	// Nothing left running may start more.
	r.wg.Wait()
	if n := r.nextID.Load(); n != after {
		t.Errorf("%d users started after the run returned", n-after)
	}
}

// Waves start their users through the same bounded loop.
func TestHugeWavesEndWithTheirStage(t *testing.T) {
	srv, _ := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
tenants:
  count: 1000000000
  waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 0s}]
scenarios:
  s:
    per_tenant: 1
    steps:
      - think: 1h
      - get: /
load: {grace: 1s, stages: [{duration: 200ms, users: 1000000000}]}
`)
	r, out := startRun(t, context.Background(), p)
	waitResult(t, out)
	if n := r.nextID.Load(); n >= 1_000_000_000 {
		t.Errorf("started %d users", n)
	}
}

// An absurd rate neither overruns its stage by the time it would take to
// issue every arrival late nor loses any: each arrival is started or, when
// it could not be started within maxCatchUp of its time, counted dropped.
func TestAbsurdRateIsBoundedAndCounted(t *testing.T) {
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {max_in_flight: 2, grace: 2s, stages: [{duration: 1s, rate: 1000000000/s}]}
`)
	_, out := startRun(t, context.Background(), p)
	res := waitResult(t, out)
	checkInvariants(t, res)
	if res.Totals.Requests != 1_000_000_000 {
		t.Errorf("arrivals = %d, want every one of 1e9 counted", res.Totals.Requests)
	}
	dropped := res.Totals.ByClass["dropped"]
	if dropped == 0 || res.Totals.Successful+dropped != res.Totals.Requests || res.Totals.Successful != seen.Load() {
		t.Errorf("ok %d dropped %d failed %d server %d", res.Totals.Successful, dropped, res.Totals.Failed, seen.Load())
	}
}
