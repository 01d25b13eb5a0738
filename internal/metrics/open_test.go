package metrics

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// A checkpoint's series add up to its totals while requests keep landing:
// before, the series stopped at the last closed interval while the totals
// went on to the moment of the snapshot (a kill -9 at 13 s left
// totals.requests 110,792 and a series of 110,779).
func TestSnapshotOpenSeriesAddUpToTotals(t *testing.T) {
	r := New([]StepInfo{{Scenario: "s", Name: "a"}, {Scenario: "s", Name: "b"}}, 1)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := r.Shard(int64(w))
			for i := 0; i < 200_000 && !stop.Load(); i++ {
				sh.Started(time.Duration(i%7) * time.Millisecond)
				switch i % 10 {
				case 0:
					sh.FailText(i%2, sample.ServerError, 503, time.Millisecond, "busy")
				case 1:
					sh.RecordUnfinished(0, sample.Dropped)
				case 2:
					sh.FailUnsent(1, sample.Check, "no token")
				case 3:
					sh.RecordUnfinished(1, sample.Interrupted)
				default:
					sh.Record(i%2, sample.OK, time.Duration(i%50)*time.Millisecond)
				}
			}
		}()
	}
	checked := 0
	for i := 0; i < 40; i++ {
		if i%4 == 0 {
			r.Tick(float64(i/4), 0)
		}
		snap := r.SnapshotOpen(func(at float64) float64 { return at * 10 })
		checkOpen(t, snap)
		checked++
	}
	stop.Store(true)
	wg.Wait()
	snap := r.SnapshotOpen(func(float64) float64 { return 0 })
	checkOpen(t, snap)
	// Once every request is in, the open interval holds what no Tick
	// drained: closing it gives the same counts.
	r.Tick(float64(len(snap.Series.T)-1), 0)
	closed := r.Snapshot()
	if got, want := closed.Series.Completed[len(closed.Series.T)-1], snap.Series.Completed[len(snap.Series.T)-1]; got != want {
		t.Errorf("open interval completed %d, the same interval closed %d", want, got)
	}
	if got, want := closed.Series.Dropped[len(closed.Series.T)-1], snap.Series.Dropped[len(snap.Series.T)-1]; got != want {
		t.Errorf("open interval dropped %d, the same interval closed %d", want, got)
	}
	if checked == 0 {
		t.Fatal("no snapshot checked")
	}
}

func checkOpen(t *testing.T, snap Snapshot) {
	t.Helper()
	res := result.Result{Totals: snap.Totals, Series: snap.Series}
	if err := res.CheckSeriesTotals(); err != nil {
		t.Fatal(err)
	}
	var started int64
	for _, v := range snap.Series.Started {
		started += v
	}
	if started != snap.Totals.Iterations {
		t.Fatalf("series.started adds up to %d, totals.iterations %d", started, snap.Totals.Iterations)
	}
	n := len(snap.Series.T)
	if n == 0 || snap.Series.T[n-1] != float64(n-1) || snap.Series.Target[n-1] != float64(n-1)*10 && snap.Series.Target[n-1] != 0 {
		t.Fatalf("open interval at t=%v target %v, want t=%d", snap.Series.T, snap.Series.Target, n-1)
	}
}
