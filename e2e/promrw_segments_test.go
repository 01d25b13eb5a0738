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

// TestSegmentsStreamTheirOwnSeries: two segments of one run, as the pods
// of `k8s PLAN --output` run them (--segment i/N, one --start-at, one
// --testid), push at once into one Prometheus. Each keeps its own series
// (segment label) whose sum is its result's; the run's sum is both's.
// Before, both wrote one series and Prometheus kept either's figure
// (512 where the run made 1,011).
func TestSegmentsStreamTheirOwnSeries(t *testing.T) {
	prom := startPrometheus(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: segs
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 20ms
load:
  stages: [{duration: 4s, users: 4}]
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	segs := []string{"0/2", "1/2"}
	procs := make([]*e2etest.Proc, len(segs))
	for i, seg := range segs {
		procs[i] = e2etest.Start(t, "", nil, "run", planPath, "--segment", seg, "--start-at", start, "-q",
			"-o", filepath.Join(dir, fmt.Sprintf("seg%d.json", i)),
			"--output", "prometheus-rw="+prom+"/api/v1/write", "--testid", "segs-1")
	}
	var all, users int64
	want := map[string]int64{}
	for i, p := range procs {
		if o := p.Wait(t, 2*time.Minute); o.Code != 0 {
			t.Fatalf("segment %s: %s", segs[i], o)
		}
		r := e2etest.ReadResult(t, filepath.Join(dir, fmt.Sprintf("seg%d.json", i)))
		for _, s := range r.Steps {
			want[segs[i]] += s.Requests
		}
		all += want[segs[i]]
		users += int64(r.Run.MaxUsers)
	}
	sel := `stampede_requests_total{testid="segs-1"}`
	_, last, series := promSpan(t, prom, sel)
	if len(series) != 2 {
		t.Fatalf("%d series, want one per segment: %v", len(series), series)
	}
	for _, seg := range segs {
		// At the segment's own last sample: its stale markers follow.
		one := fmt.Sprintf(`stampede_requests_total{testid="segs-1",segment=%q}`, seg)
		_, end, _ := promSpan(t, prom, one)
		got := promAt(t, prom, "sum("+one+")", end)
		if len(got) != 1 || got[0] != float64(want[seg]) || want[seg] == 0 {
			t.Errorf("segment %s: Prometheus has %v requests, its result %d", seg, got, want[seg])
		}
	}
	// The segments end at their own instants: the run's total is each
	// series' last value, summed (the dashboard's Requests stat).
	if got := promAt(t, prom, "sum(max_over_time("+sel+"[10m]))", last); len(got) != 1 || got[0] != float64(all) {
		t.Errorf("the run: Prometheus has %v requests, the segments' results %d", got, all)
	}
	// The dashboard's peak is the run's, summed over its segments at one
	// instant (it showed one segment's: 2 of the 4).
	first, _, _ := promSpan(t, prom, sel)
	rangeS := int(last.Sub(first).Seconds()) + 2
	if got := panelValues(t, prom, loadDashboard(t), "Peak active users", "segs-1", rangeS, first, last); len(got) != 1 || got[0] != float64(users) || users != 4 {
		t.Errorf("the Peak active users stat: %v, the segments' results %d (want 4)", got, users)
	}
}
