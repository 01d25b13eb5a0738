package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestHighestRateIsAccountedFor: the highest rate validation lets one
// process ask for, with two slots, on a loaded machine. Whatever the
// dispatcher manages, the run ends with its stage (the limit is only a
// safety net) and every arrival is accounted for: started, or counted
// dropped when no slot was free or it could not be started within the
// bounded catch-up. Rates past what the dispatcher can do are tested on
// the engine (internal/run, TestAbsurdRateIsBoundedAndCounted), since
// validation refuses them here.
func TestHighestRateIsAccountedFor(t *testing.T) {
	t.Parallel()
	srv, seen := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: highest-rate
target: %s
scenarios:
  s: {steps: [{name: ok, get: /ok}]}
load:
  max_in_flight: 2
  grace: 2s
  stages: [{duration: 1s, rate: 1000000/s}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 2*time.Minute, "", "run", plan, "-o", out)
	if o.Code == 2 || o.Code > 3 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if res.Run.Partial {
		t.Errorf("partial result: %s", res.Run.PartialReason)
	}
	if res.Totals.Requests != 1_000_000 {
		t.Errorf("requests = %d, want the 1,000,000 arrivals each counted once", res.Totals.Requests)
	}
	dropped := res.Totals.ByClass["dropped"]
	if dropped == 0 || res.Totals.Successful+dropped != res.Totals.Requests {
		t.Errorf("ok %d + dropped %d != requests %d (by class %v)", res.Totals.Successful, dropped, res.Totals.Requests, res.Totals.ByClass)
	}
	if got := seen.get("/ok"); got != res.Totals.Successful {
		t.Errorf("server answered %d, result says %d successful", got, res.Totals.Successful)
	}
}
