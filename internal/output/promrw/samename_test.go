package promrw

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// TestSameNamedStepsKeepTheirOwnSeries: two unnamed steps to one path
// share a name ("GET /items"); Prometheus must keep both, not one of the
// two samples of a single series.
func TestSameNamedStepsKeepTheirOwnSeries(t *testing.T) {
	base := startPrometheus(t)
	s, err := New("prometheus-rw="+base+"/api/v1/write", base+"/api/v1/write", Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &result.Result{Plan: result.PlanInfo{Name: "shop"}, Run: result.RunInfo{Started: time.Now().Add(-time.Minute)}}
	for _, n := range []int64{1357, 1357, 20} {
		h := result.NewHistogram()
		for j := int64(0); j < n; j++ {
			h.RecordValue(2000)
		}
		r.Steps = append(r.Steps, result.Step{Scenario: "buyer", Name: "GET /items", Requests: n, Successful: n,
			ByClass: map[string]int64{}, LatencyOK: result.LatencyOf(h)})
	}
	r.Series = result.Series{IntervalS: 1, T: []float64{0}, Active: []int64{1}}
	now := time.Now()
	s.now = func() time.Time { return now }
	if err := s.Close(r); err != nil {
		t.Fatalf("close: %v", err)
	}
	got := query(t, base, `stampede_requests_total{plan="shop",step="GET /items"}`, "step_index", now)
	want := map[string]float64{"0": 1357, "1": 1357, "2": 20}
	if len(got) != len(want) {
		t.Fatalf("series Prometheus kept, by step_index: %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("step_index %s: %v requests, want %v (all: %v)", k, got[k], v, got)
		}
	}
	sum := query(t, base, `sum(stampede_requests_total{plan="shop"})`, "", now)
	if sum[""] != 1357+1357+20 {
		t.Errorf("requests summed over the steps: %v, want %d", sum[""], 1357+1357+20)
	}
	cnt := query(t, base, `stampede_request_duration_seconds_count{plan="shop"}`, "step_index", now)
	if len(cnt) != 3 || cnt["1"] != 1357 {
		t.Errorf("latency histograms by step_index: %v", cnt)
	}
}
