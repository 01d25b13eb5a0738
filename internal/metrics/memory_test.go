package metrics

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// stepCost builds a recorder for a plan of n request steps of which only
// the first is ever sent, records into it from every shard, closes a few
// intervals and takes a snapshot, as a run with checkpoints does. It
// returns the heap the recorder holds and what one snapshot allocates.
func stepCost(n int) (retained, snapshot uint64) {
	steps := make([]StepInfo, n)
	for i := range steps {
		steps[i] = StepInfo{Scenario: "s", Name: fmt.Sprintf("GET /page/%d", i)}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := New(steps, 1)
	for id := int64(0); id < int64(len(rec.shards)); id++ {
		sh := rec.Shard(id)
		sh.Started(time.Millisecond)
		sh.Record(0, sample.OK, 3*time.Millisecond)
		sh.Record(0, sample.ServerError, 5*time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		rec.Tick(float64(i), 1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	retained = after.HeapAlloc - before.HeapAlloc
	runtime.ReadMemStats(&before)
	snap := rec.Snapshot()
	runtime.ReadMemStats(&after)
	snapshot = after.TotalAlloc - before.TotalAlloc
	runtime.KeepAlive(rec)
	runtime.KeepAlive(snap)
	return retained, snapshot
}

// BenchmarkPlanSteps reports the memory a plan's request steps cost the
// recorder when all but the first stay idle, with the recorder's shards
// (one per CPU) set to 2 and to 16: bytes held per step and bytes one
// snapshot (each checkpoint, and the final result) allocates per step,
// both over all steps and for each idle step beyond the first.
func BenchmarkPlanSteps(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		for _, shards := range []int{2, 16} {
			b.Run(fmt.Sprintf("steps=%d/shards=%d", n, shards), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(shards))
				var held, snap, held1, snap1 uint64
				for i := 0; i < b.N; i++ {
					held1, snap1 = stepCost(1)
					held, snap = stepCost(n)
				}
				b.ReportMetric(float64(held)/float64(n), "held-B/step")
				b.ReportMetric(float64(snap)/float64(n), "snapshot-B/step")
				if n > 1 {
					b.ReportMetric((float64(held)-float64(held1))/float64(n-1), "held-B/idle-step")
					b.ReportMetric((float64(snap)-float64(snap1))/float64(n-1), "snapshot-B/idle-step")
				}
			})
		}
	}
}

// An idle request step costs at most 64 KiB of recorder memory, held or
// allocated per snapshot, even with 16 shards: a plan imported from a
// recording has hundreds of steps, and histograms made up front (two of
// 184 KB per step and shard) took gigabytes before any request was sent.
func TestIdleStepCost(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	const limit = 64 << 10
	held1, snap1 := stepCost(1)
	held, snap := stepCost(1001)
	perHeld := (float64(held) - float64(held1)) / 1000
	perSnap := (float64(snap) - float64(snap1)) / 1000
	t.Logf("per idle step with 16 shards: %.0f B held, %.0f B per snapshot", perHeld, perSnap)
	if perHeld > limit || perSnap > limit {
		t.Errorf("an idle step costs %.0f B held and %.0f B per snapshot, want at most %d", perHeld, perSnap, limit)
	}
}
