package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestClosedLatencyExcludesThink: in the closed model latencies are service
// times from send (run.latency_from "send"), so a think step before the
// first request must not be part of that request's latency.
//
// Regression test: internal/vu/user.go Iterate once started the first
// request's clock at the start of the iteration, so a leading think step
// was added to that request's latency (the fastest request took 200ms).
func TestClosedLatencyExcludesThink(t *testing.T) {
	t.Parallel()
	srv, counts := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: think-first
target: %s
scenarios:
  s:
    steps:
      - think: 200ms
      - {name: ok, get: /ok, expect: {status: 200}}
load:
  stages: [{duration: 1s, users: 2}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if res.Run.LatencyFrom != "send" {
		t.Fatalf("latency_from %q, want send", res.Run.LatencyFrom)
	}
	st := stepOf(t, res, "s", "ok")
	if st.Requests == 0 || st.Requests != counts.get("/ok") {
		t.Fatalf("ok step: %d requests, server saw %d", st.Requests, counts.get("/ok"))
	}
	// A loopback request to an in-process server takes well under 100ms;
	// the 200ms think must not show.
	if min := st.LatencyOK.MinUS; min >= 100_000 {
		t.Errorf("closed model (latency from send): the fastest request took %v, "+
			"which includes the 200ms think step before it", time.Duration(min)*time.Microsecond)
	}
}
