package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestCoordinatedOmission: against a server that stalls for the last 0.5s
// of every 2s, the open model measures from the intended start, so the
// stall shows in p99; the closed model says its latencies are service
// times from send.
func TestCoordinatedOmission(t *testing.T) {
	t.Parallel()

	t.Run("open", func(t *testing.T) {
		t.Parallel()
		srv, seen := stallServer(t, 2*time.Second, 500*time.Millisecond)
		plan := e2etest.WritePlan(t, fmt.Sprintf(`name: stall-open
target: %s
defaults: {timeout: 5s}
scenarios:
  s: {steps: [{name: get, get: /}]}
load:
  stages: [{duration: 4s, rate: 200/s}]
  max_in_flight: 1000
`, srv.URL), nil)
		out := filepath.Join(t.TempDir(), "r.json")
		o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
		if o.Code != 0 {
			t.Fatalf("want exit 0:\n%s", o)
		}
		res := e2etest.ReadResult(t, out)
		checkSums(t, res)
		if res.Run.Model != "open" || res.Run.LatencyFrom != "intended" {
			t.Errorf("model %q latency_from %q, want open/intended", res.Run.Model, res.Run.LatencyFrom)
		}
		tt := res.Totals
		t.Logf("requests %d, server %d, by_class %v, p50 %dµs p99 %dµs max %dµs", tt.Requests, seen.Load(), tt.ByClass, tt.LatencyOK.P50US, tt.LatencyOK.P99US, tt.LatencyOK.MaxUS)
		// 200/s for 4s is 800 arrivals, each one request or one dropped.
		if tt.Requests != 800 {
			t.Errorf("requests (dropped included) = %d, want 800 arrivals", tt.Requests)
		}
		if sent := tt.Requests - tt.ByClass["dropped"]; sent != seen.Load() {
			t.Errorf("%d requests sent by the result, the server saw %d", sent, seen.Load())
		}
		if tt.Failed != 0 {
			t.Errorf("failures: %v", tt.ByClass)
		}
		if tt.LatencyOK.P99US < 300_000 {
			t.Errorf("open model p99 = %dµs; the 0.5s stalls must show (≥ 300ms)", tt.LatencyOK.P99US)
		}
		if !strings.Contains(o.Stdout, "intended start") {
			t.Errorf("summary does not say latencies are from the intended start:\n%s", o.Stdout)
		}
	})

	t.Run("closed", func(t *testing.T) {
		t.Parallel()
		srv, _ := stallServer(t, 2*time.Second, 500*time.Millisecond)
		plan := e2etest.WritePlan(t, fmt.Sprintf(`name: stall-closed
target: %s
defaults: {timeout: 5s}
scenarios:
  s:
    steps:
      - think: 2ms
      - {name: get, get: /}
load:
  stages: [{duration: 4s, users: 2}]
`, srv.URL), nil)
		out := filepath.Join(t.TempDir(), "r.json")
		o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
		if o.Code != 0 {
			t.Fatalf("want exit 0:\n%s", o)
		}
		res := e2etest.ReadResult(t, out)
		checkSums(t, res)
		if res.Run.Model != "closed" || res.Run.LatencyFrom != "send" {
			t.Errorf("model %q latency_from %q, want closed/send", res.Run.Model, res.Run.LatencyFrom)
		}
		tt := res.Totals
		t.Logf("requests %d, p50 %dµs p99 %dµs max %dµs", tt.Requests, tt.LatencyOK.P50US, tt.LatencyOK.P99US, tt.LatencyOK.MaxUS)
		if !strings.Contains(o.Stdout, "service times") {
			t.Errorf("closed-model summary lacks the \"service times\" note:\n%s", o.Stdout)
		}
		if tt.Failed != 0 {
			t.Errorf("failures: %v", tt.ByClass)
		}
	})
}
