package metrics

import (
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

func TestRecorderCountsAndMergesExactly(t *testing.T) {
	rec := New([]StepInfo{{Scenario: "s", Name: "a"}, {Scenario: "s", Name: "b"}}, 1)
	// Many users on many goroutines record into their shards at once; the
	// merged totals must equal what a single histogram would hold.
	want := result.NewHistogram()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for u := int64(1); u <= 16; u++ {
		wg.Add(1)
		go func(u int64) {
			defer wg.Done()
			sh := rec.Shard(u)
			for i := 0; i < 500; i++ {
				lat := time.Duration(u*1000+int64(i)) * time.Microsecond
				class := sample.OK
				if i%10 == 0 {
					class = sample.ServerError
				}
				sh.Record(int(u%2), class, lat)
				if class == sample.OK {
					mu.Lock()
					want.RecordValue(lat.Microseconds())
					mu.Unlock()
				}
			}
			sh.RecordUnfinished(0, sample.Dropped)
			sh.Started(0)
		}(u)
	}
	// Interval edges while recording goes on must not lose counts.
	for i := 0; i < 5; i++ {
		rec.Tick(float64(i), 0)
	}
	wg.Wait()
	rec.Tick(5, 0)
	snap := rec.Snapshot()
	if snap.Totals.Requests != 16*501 {
		t.Fatalf("requests = %d, want %d", snap.Totals.Requests, 16*501)
	}
	if got := snap.Totals.ByClass["server_error"]; got != 16*50 {
		t.Errorf("server_error = %d, want %d", got, 16*50)
	}
	if got := snap.Totals.ByClass["dropped"]; got != 16 {
		t.Errorf("dropped = %d, want 16", got)
	}
	if snap.Totals.Failed != 16*50+16 || snap.Totals.Successful != 16*450 {
		t.Errorf("failed %d successful %d", snap.Totals.Failed, snap.Totals.Successful)
	}
	if exp := result.LatencyOf(want); snap.Totals.LatencyOK.P99US != exp.P99US || snap.Totals.LatencyOK.Count != exp.Count || snap.Totals.LatencyOK.MaxUS != exp.MaxUS {
		t.Errorf("merged ok latency %+v, want %+v", snap.Totals.LatencyOK, exp)
	}
	// The series add up to the totals.
	var completed, failed int64
	for i := range snap.Series.T {
		completed += snap.Series.Completed[i]
	}
	for _, col := range snap.Series.Failed {
		if len(col) != len(snap.Series.T) {
			t.Fatalf("failed column has %d values for %d intervals", len(col), len(snap.Series.T))
		}
		for _, v := range col {
			failed += v
		}
	}
	if completed != 16*500 || failed != snap.Totals.Failed {
		t.Errorf("series: completed %d failed %d; totals %d/%d", completed, failed, 16*500, snap.Totals.Failed)
	}
	if snap.Iterations != 16 {
		t.Errorf("iterations = %d", snap.Iterations)
	}
	res := &result.Result{Totals: snap.Totals, Steps: snap.Steps}
	if err := res.Check(); err != nil {
		t.Errorf("snapshot fails the result invariants: %v", err)
	}
}

func TestLatencyClamped(t *testing.T) {
	rec := New([]StepInfo{{Name: "a"}}, 1)
	sh := rec.Shard(1)
	sh.Record(0, sample.OK, 0)           // below 1µs: counted as 1µs
	sh.Record(0, sample.OK, 2*time.Hour) // above 1h: counted as 1h
	snap := rec.Snapshot()
	if snap.Totals.LatencyOK.Count != 2 || snap.Totals.LatencyOK.MinUS != 1 {
		t.Errorf("clamped: %+v", snap.Totals.LatencyOK)
	}
}

func BenchmarkRecord(b *testing.B) {
	rec := New([]StepInfo{{Name: "a"}}, 1)
	sh := rec.Shard(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sh.Record(0, sample.OK, time.Duration(i&0xffff)*time.Microsecond)
	}
}
