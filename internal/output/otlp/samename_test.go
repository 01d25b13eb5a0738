package otlp

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// TestSameNamedStepsDistinctPoints: two unnamed steps to one path share a
// name; each must be a data point with attributes of its own, or a
// backend keeps one of the two as the same series.
func TestSameNamedStepsDistinctPoints(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s, err := New("otlp="+srv.URL, srv.URL, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r := &result.Result{Plan: result.PlanInfo{Name: "shop"}, Run: result.RunInfo{Started: time.Now().Add(-time.Minute)}}
	for _, n := range []int64{1357, 1357, 20} {
		r.Steps = append(r.Steps, result.Step{Scenario: "buyer", Name: "GET /items", Requests: n, Successful: n, ByClass: map[string]int64{}})
	}
	r.Series = result.Series{IntervalS: 1, T: []float64{0}, Active: []int64{1}}
	if err := s.Close(r); err != nil {
		t.Fatalf("close: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 1 {
		t.Fatalf("%d exports, want 1", len(rc.got))
	}
	ms := rc.got[0].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	for i := 0; i < ms.Len(); i++ {
		m := ms.At(i)
		if m.Name() != "stampede.requests" {
			continue
		}
		dps := m.Sum().DataPoints()
		got := map[string]float64{}
		for j := 0; j < dps.Len(); j++ {
			dp := dps.At(j)
			key := "(none)"
			if v, ok := dp.Attributes().Get("step_index"); ok {
				key = v.AsString()
			}
			if _, dup := got[key]; dup {
				t.Errorf("two data points with the same attributes %v", dp.Attributes().AsRaw())
			}
			got[key] = dp.DoubleValue()
		}
		if len(got) != 3 || got["0"] != 1357 || got["1"] != 1357 || got["2"] != 20 {
			t.Errorf("requests by step_index: %v, want 0: 1357, 1: 1357, 2: 20", got)
		}
		return
	}
	t.Fatal("no stampede.requests metric")
}
