package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestURLOpenRunsLoopEngine: `stampede url --open -r RATE` (an open-model
// arrival rate; -r alone paces closed users, which the loop does not run)
// runs its arrivals on the event-loop engine, says so in the result and
// the summary's header, and counts exactly what the server answered;
// --engine goroutines runs the other engine.
func TestURLOpenRunsLoopEngine(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the event-loop engine is Linux's")
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	// Arrivals are split across a loop per core: one loop, and two.
	for _, c := range []struct{ flag, procs, want, header string }{
		{"", "1", "loop", "event-loop engine"},
		{"", "2", "loop", "event-loop engine"},
		{"goroutines", "2", "goroutines", ""},
	} {
		hits.Store(0)
		out := filepath.Join(t.TempDir(), "r.json")
		// -c 200 holds every arrival of the second: none is dropped
		// however long a loaded machine stalls the run, so every request
		// is one the server answered.
		args := []string{"url", "--open", "-r", "200", "-c", "200", "-d", "1s", "-o", out, srv.URL + "/x"}
		if c.flag != "" {
			args = append(args, "--engine", c.flag)
		}
		o := e2etest.Start(t, "", []string{"GOMAXPROCS=" + c.procs}, args...).Wait(t, 60*time.Second)
		if o.Code != 0 {
			t.Fatalf("exit %d\n%s", o.Code, o)
		}
		res := e2etest.ReadResult(t, out)
		if res.Run.Engine != c.want {
			t.Errorf("--engine %q, GOMAXPROCS %s: run.engine = %q, want %q", c.flag, c.procs, res.Run.Engine, c.want)
		}
		if res.Run.LatencyFrom != "intended" {
			t.Errorf("--engine %q: latency_from = %q, want intended", c.flag, res.Run.LatencyFrom)
		}
		if res.Totals.Requests == 0 || res.Totals.Requests != hits.Load() || res.Totals.Failed != 0 || res.Generator.Lag.Count != res.Totals.Iterations {
			t.Errorf("--engine %q: %d requests (%d failed %v, %d iterations, %d lag samples), the server answered %d\n%s",
				c.flag, res.Totals.Requests, res.Totals.Failed, res.Totals.ByClass, res.Totals.Iterations, res.Generator.Lag.Count, hits.Load(), o)
		}
		checkSums(t, res)
		if c.header != "" && !strings.Contains(o.Stdout, c.header) {
			t.Errorf("summary does not say %q:\n%s", c.header, o.Stdout)
		}
		if c.header == "" && strings.Contains(o.Stdout, "event-loop") {
			t.Errorf("goroutine run's summary names the loop:\n%s", o.Stdout)
		}
	}
}
