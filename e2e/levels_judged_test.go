package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// Issue 25: a level is judged like a run. Each level answers to gates.slo
// and to the plan's thresholds, its connection steps are measured, and the
// whole run's figures do not add levels that ran one after another as if
// they ran side by side.

// demoHub is the demo target (kitchen hub and orders) on loopback.
func demoHub(t *testing.T) string {
	t.Helper()
	d := demo.New(demo.Options{})
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(func() {
		srv.Close()
		d.CloseHub()
	})
	return srv.URL
}

const judgedGates = `name: judged-gates
target: %s
tenants: {count: 1}
scenarios:
  kitchen-display:
    per_tenant: 2
    signalr:
      url: /hubs/kitchen
      invoke:
        - {method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 10s}
      listen: [OrderPlaced]
      timestamp: "0.sentAt"
  customer:
    per_tenant: 1
    steps:
      - think: 50ms..100ms
      - name: POST order
        post: /restaurants/{{ tenant }}/orders
        json: {table: 1, items: [{sku: taco-al-pastor, qty: 1}]}
        expect: {status: 201}
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 1}
%s
gates:
  vary: tenants
  levels: [1, 3]
  ramp: 300ms
  hold: 1s
  slo: [%s]
`

// The plan's thresholds beside gates.slo used to be dropped: a p50 no
// target can meet passed every gate with exit 0. It must fail the first
// level, in the table, the result, the JUnit report and the exit code.
func TestGatesJudgeThePlansThresholds(t *testing.T) {
	src := fmt.Sprintf(judgedGates, demoHub(t), `thresholds: ["p50 < 1us"]`, `"error_rate < 5%"`)
	path := e2etest.WritePlan(t, src, nil)
	dir := filepath.Dir(path)
	out, junit := filepath.Join(dir, "gates.json"), filepath.Join(dir, "junit.xml")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "gates", path, "-o", out, "--junit", junit, "-q")
	if o.Code != 1 {
		t.Fatalf("exit %d, want 1: the plan's threshold p50 < 1us fails\n%s", o.Code, o)
	}
	if !strings.Contains(o.Stdout, "p50 < 1us") || !strings.Contains(o.Stdout, "Gate tenants 1 failed") {
		t.Errorf("the table does not show the threshold's verdict or the failed gate\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 1 || res.Levels[0].Pass {
		t.Fatalf("levels %d (first passed: %v), want one failed level", len(res.Levels), len(res.Levels) > 0 && res.Levels[0].Pass)
	}
	var judged []string
	for _, th := range res.Levels[0].SLO {
		judged = append(judged, th.Expr)
	}
	if strings.Join(judged, ";") != "error_rate < 5%;p50 < 1us" {
		t.Errorf("level judged by %q, want the SLO and then the plan's threshold", judged)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `name="p50 &lt; 1us"`) {
		t.Errorf("JUnit has no case for the plan's threshold:\n%s", x)
	}
}

// A connection SLO can pass: the displays connect during the unmeasured
// ramp, and their handshakes are the level's (they used to be cut off,
// and "no requests in step handshake" failed the first gate). The whole
// run's Connections block takes the largest level's peak, not the sum,
// and its throughput is measured requests over measured time.
func TestGatesMeasureConnectionSteps(t *testing.T) {
	src := fmt.Sprintf(judgedGates, demoHub(t), "", `"handshake: error_rate < 1%", "negotiate: requests >= 1", "error_rate < 5%"`)
	path := e2etest.WritePlan(t, src, nil)
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "gates.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "gates", path, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("exit %d, want 0: every display connects\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	var measured, requests float64
	for i, l := range res.Levels {
		r := l.Result
		displays := int64(2 * l.Value)
		cs := connScenario(t, r, "kitchen-display")
		hs := stepOf(t, r, "kitchen-display", "handshake")
		if cs.Opened != displays || hs.Requests != cs.Attempts || hs.Failed != 0 {
			t.Errorf("level %d: %d opened (want %d), handshake %d of %d attempts, %d failed", i+1, cs.Opened, displays, hs.Requests, cs.Attempts, hs.Failed)
		}
		// Both cover the level from its start (the step was cut to the
		// hold, a quarter short, the count was not). A push is counted as
		// it arrives and its latency recorded just after, and the hold's
		// end is read as one snapshot, so pushes arriving meanwhile may be
		// in the count and not yet in the step: a few, never the ramp's.
		if p, n := stepOf(t, r, "kitchen-display", "push OrderPlaced"), cs.Pushes["OrderPlaced"]; p.Requests > n || n-p.Requests > n/10+displays {
			t.Errorf("level %d: step push OrderPlaced %d, Connections pushes %d", i+1, p.Requests, n)
		}
		measured += r.Run.DurationS
		requests += float64(r.Totals.Requests)
	}
	top := connScenario(t, res, "kitchen-display")
	if top.PeakOpen != 6 || top.Target != 6 || top.Opened != 8 || top.OpenAtEnd != 6 || top.Disconnects["level_end"] != 2 {
		t.Errorf("all levels: peak %d, target %d, opened %d, open at end %d, closed at a level's end %d; want 6, 6, 8, 6, 2",
			top.PeakOpen, top.Target, top.Opened, top.OpenAtEnd, top.Disconnects["level_end"])
	}
	if d := res.Run.DurationS - measured; d > 1e-6 || d < -1e-6 || float64(res.Totals.Requests) != requests {
		t.Errorf("all levels: %.3fs and %d requests, want the levels' measured %.3fs and %.0f", res.Run.DurationS, res.Totals.Requests, measured, requests)
	}
}

func connScenario(t *testing.T, r *result.Result, name string) result.ConnScenario {
	t.Helper()
	if r.Connections != nil {
		for _, s := range r.Connections.Scenarios {
			if s.Scenario == name {
				return s
			}
		}
	}
	t.Fatalf("no connection scenario %q in %+v", name, r.Connections)
	return result.ConnScenario{}
}
