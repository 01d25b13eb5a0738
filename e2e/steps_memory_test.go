package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestManySentStepsMemory: a plan of 1,000 request steps, as imported from
// a browser recording, all of them sent, fits in a small process. Each sent
// step used to hold two dense latency histograms (184 KB each) in every
// recorder shard its users recorded into, and each checkpoint made two more
// per step: this run peaked at 1.5 GB on 2 cores, where now it is under
// 0.1 GB.
func TestManySentStepsMemory(t *testing.T) {
	t.Parallel()
	const steps = 1000
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The last page fails, so failures' latencies are recorded too (a
		// failure ends its iteration, so earlier ones would starve the rest).
		if n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/page/")); err == nil && n == steps-1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	var b strings.Builder
	fmt.Fprintf(&b, "name: many-steps\ntarget: %s\nscenarios:\n  s:\n    steps:\n", srv.URL)
	for i := 0; i < steps; i++ {
		fmt.Fprintf(&b, "      - {name: GET /page/%d, get: /page/%d}\n", i, i)
	}
	b.WriteString("load:\n  stages: [{duration: 6s, users: 4}]\n")
	plan := e2etest.WritePlan(t, b.String(), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "-q")
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	sent := 0
	for _, s := range res.Steps {
		if s.Requests > 0 {
			sent++
		}
		// A request cut off when the run ended (interrupted) has no
		// latency; on a busy machine the grace period may cut one off.
		timed := s.Requests - s.ByClass["interrupted"] - s.ByClass["dropped"]
		if s.LatencyAll.Count != timed || s.LatencyOK.Count != s.Successful {
			t.Errorf("step %s: %d requests (%d successful, %d timed), latencies of %d (%d successful); by class %v",
				s.Name, s.Requests, s.Successful, timed, s.LatencyAll.Count, s.LatencyOK.Count, s.ByClass)
		}
	}
	if sent < steps {
		t.Fatalf("only %d of %d steps sent in the run (exit %d); the memory bound needs them all", sent, steps, o.Code)
	}
	if f := res.Totals.ByClass["server_error"]; f == 0 {
		t.Errorf("no failure recorded; by_class %v", res.Totals.ByClass)
	}
	const limit = 200 << 20
	rss := res.Generator.MaxRSS
	t.Logf("%d steps sent, %d requests, peak RSS %.1f MiB", sent, res.Totals.Requests, float64(rss)/(1<<20))
	if rss <= 0 || rss > limit {
		t.Errorf("peak RSS %.1f MiB with %d sent steps, want at most %d MiB", float64(rss)/(1<<20), sent, limit>>20)
	}
}
