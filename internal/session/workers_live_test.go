package session

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/result"
)

func segResult(start time.Time, idx, intervals int, perInterval int64) *result.Result {
	h := result.NewHistogram()
	n := perInterval * int64(intervals)
	for i := int64(0); i < n; i++ {
		h.RecordValue(1000)
	}
	lat := result.LatencyOf(h)
	r := &result.Result{Schema: result.Schema, Plan: result.PlanInfo{Name: "w", SHA256: "x"},
		Run:    result.RunInfo{Started: start, DurationS: float64(intervals), Model: "closed", Segment: result.Segment{Index: idx, Count: 2}, Partial: true, PartialReason: "checkpoint"},
		Totals: result.Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps:  []result.Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat}},
		Series: result.Series{IntervalS: 1, Failed: map[string][]int64{}}}
	for i := 0; i < intervals; i++ {
		r.Series.T = append(r.Series.T, float64(i))
		for _, c := range []*[]int64{&r.Series.Started, &r.Series.Completed, &r.Series.OK} {
			*c = append(*c, perInterval)
		}
		for _, c := range []*[]int64{&r.Series.P50US, &r.Series.P95US, &r.Series.P99US, &r.Series.Active, &r.Series.InFlight, &r.Series.Dropped, &r.Series.LagP99US} {
			*c = append(*c, 1)
		}
		r.Series.Target = append(r.Series.Target, 1)
	}
	return r
}

// TestWorkersSnapshot: the sinks of a --workers run hear the merge of the
// checkpoints the workers wrote since the test started, with the series
// cut to the intervals every segment has reached, and a previous run's
// file left out.
func TestWorkersSnapshot(t *testing.T) {
	dir := t.TempDir()
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	e := &Workers{Local: dist.Local{Workers: 2, Dir: dir, StartAt: start}}
	if s := e.Snapshot(""); s != nil {
		t.Fatalf("snapshot before any checkpoint: %+v", s.Totals)
	}
	seg0, seg1 := filepath.Join(dir, "seg-0.json"), filepath.Join(dir, "seg-1.json")
	// A previous run's file: older than this test's start.
	if err := result.Write(seg1, segResult(start, 1, 9, 100)); err != nil {
		t.Fatal(err)
	}
	old := start.Add(-time.Hour)
	os.Chtimes(seg1, old, old)
	if err := result.Write(seg0, segResult(start, 0, 5, 10)); err != nil {
		t.Fatal(err)
	}
	s := e.Snapshot("")
	if s == nil || s.Totals.Requests != 50 || !s.Run.Partial {
		t.Fatalf("one segment so far: %+v", s)
	}
	if len(s.Series.T) != 0 {
		t.Errorf("one segment so far, series %v: an interval the other has not reached was shown", s.Series.T)
	}
	if err := result.Write(seg1, segResult(start, 1, 3, 20)); err != nil {
		t.Fatal(err)
	}
	s = e.Snapshot("")
	if s.Totals.Requests != 50+60 {
		t.Errorf("requests %d, want 110 from both checkpoints", s.Totals.Requests)
	}
	if len(s.Series.T) != 3 || len(s.Series.Started) != 3 || s.Series.Started[2] != 30 {
		t.Errorf("series %v started %v: want the 3 intervals both segments reached, summed", s.Series.T, s.Series.Started)
	}
}
