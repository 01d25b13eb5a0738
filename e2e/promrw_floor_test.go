package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestTwoWorkersRunsIntoOnePrometheus is the floor of issue 30: two
// `run --workers 2` at once, streaming into one real Prometheus, keep
// series of their own (by testid), and for each run the request counter
// summed over its series, and its increase() over the run's window, are
// the run's total exactly. Before, the runs' series were one (Prometheus
// showed either's figure), and increase() left out the first checkpoint's
// 5 s of counts.
func TestTwoWorkersRunsIntoOnePrometheus(t *testing.T) {
	prom := startPrometheus(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: floor
target: %s
scenarios:
  s:
    steps:
      - get: /
      - get: /missing
      - think: 20ms
load:
  stages: [{duration: 8s, users: 4}]
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	ids := []string{"floor-a", "floor-b"}
	procs := make([]*e2etest.Proc, len(ids))
	for i, id := range ids {
		procs[i] = e2etest.Start(t, "", nil, "run", planPath, "--workers", "2", "-q", "-o", filepath.Join(dir, id+".json"),
			"--output", "prometheus-rw="+prom+"/api/v1/write", "--testid", id, "--label", "suite=floor")
	}
	for i, p := range procs {
		// Every /missing fails: the run's verdict is no threshold, exit 0.
		if o := p.Wait(t, 3*time.Minute); o.Code != 0 {
			t.Fatalf("run %s: %s", ids[i], o)
		}
	}
	for _, id := range ids {
		r := e2etest.ReadResult(t, filepath.Join(dir, id+".json"))
		if r.Run.TestID != id {
			t.Errorf("%s: the result's run.testid is %q", id, r.Run.TestID)
		}
		var total, failed int64
		for _, s := range r.Steps {
			total += s.Requests
			failed += s.Failed
		}
		sel := fmt.Sprintf(`stampede_requests_total{testid=%q,suite="floor"}`, id)
		_, last, series := promSpan(t, prom, sel)
		if len(series) != len(r.Steps) || total == 0 {
			t.Fatalf("%s: %d series of requests, the result has %d steps (%d requests)", id, len(series), len(r.Steps), total)
		}
		for _, s := range series {
			if s.Metric["segment"] != "all" {
				t.Errorf("%s: series %v, want segment=all (the coordinator streams the merge)", id, s.Metric)
			}
		}
		window := last.Sub(r.Run.Started).Truncate(time.Second) + 2*time.Second
		sum := promAt(t, prom, "sum("+sel+")", last)
		inc := promAt(t, prom, fmt.Sprintf("sum(increase(%s[%ds]))", sel, int(window.Seconds())), last)
		fails := promAt(t, prom, fmt.Sprintf(`sum(increase(stampede_failures_total{testid=%q}[%ds]))`, id, int(window.Seconds())), last)
		t.Logf("%s: result %d requests (%d failed); Prometheus: sum %v, increase() over %ds %v, failures increase() %v",
			id, total, failed, sum, int(window.Seconds()), inc, fails)
		if len(sum) != 1 || sum[0] != float64(total) || len(inc) != 1 || inc[0] != float64(total) {
			t.Errorf("%s: requests summed %v, increase() over the run %v; the result's total %d", id, sum, inc, total)
		}
		if len(fails) != 1 || fails[0] != float64(failed) || failed == 0 {
			t.Errorf("%s: failures increase() %v; the result's %d", id, fails, failed)
		}
	}
}
