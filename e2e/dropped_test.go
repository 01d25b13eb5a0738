package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestOpenDropped: in the open model an arrival with no free worker is
// counted as `dropped`, never silently skipped: every scheduled arrival is
// either a request the server saw or a drop.
func TestOpenDropped(t *testing.T) {
	t.Parallel()
	srv, seen := hangServer(t)
	const maxInFlight = 3
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: dropped
target: %s
scenarios:
  s: {steps: [{name: hang, get: /hang, timeout: 400ms}]}
load:
  stages: [{duration: 2s, rate: 50/s}]
  max_in_flight: %d
`, srv.URL, maxInFlight), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	tt := res.Totals
	t.Logf("requests %d, by_class %v, server %d", tt.Requests, tt.ByClass, seen.Load())
	// 50/s for 2s: 100 arrivals.
	if tt.Requests != 100 {
		t.Errorf("requests (drops included) = %d, want 100 arrivals", tt.Requests)
	}
	dropped, timeouts := tt.ByClass["dropped"], tt.ByClass["timeout"]
	if dropped+timeouts != tt.Requests || tt.Successful != 0 {
		t.Errorf("by_class %v: want only dropped and timeout", tt.ByClass)
	}
	if dropped == 0 {
		t.Errorf("no arrival dropped with %d workers each held 400ms at 50/s", maxInFlight)
	}
	if n := seen.Load(); timeouts > n || timeouts < n-maxInFlight {
		t.Errorf("%d timeouts, server saw %d requests", timeouts, n)
	}
	if got := summaryInt(t, o.Stdout, "Dropped:"); got != dropped {
		t.Errorf("summary Dropped: %d, result %d", got, dropped)
	}
}
