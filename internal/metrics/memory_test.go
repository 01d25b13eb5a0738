package metrics

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// spread is a step's latencies in a typical run: spanning two decades
// (1–100 ms), log-uniformly and densely enough that every bucket chunk in
// that range is reached, as a long run would.
var spread = func() []time.Duration {
	const n = 400
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(time.Millisecond) * math.Pow(100, float64(i)/(n-1)))
	}
	return out
}()

// sendMode is which of a plan's steps stepCost sends.
type sendMode int

const (
	sendNone  sendMode = iota // no request at all
	sendFirst                 // two requests of the first step in every shard
	sendAll                   // the first's two, then the spread and two failures of every step in every shard
)

// stepCost builds a recorder for a plan of n request steps, records into
// it from every shard as sent says, closes a few intervals and takes a
// snapshot, as a run with checkpoints does. It returns the heap the
// recorder holds and what one snapshot allocates.
func stepCost(n int, sent sendMode) (retained, snapshot uint64) {
	steps := make([]StepInfo, n)
	for i := range steps {
		steps[i] = StepInfo{Scenario: "s", Name: fmt.Sprintf("GET /page/%d", i)}
	}
	var before, after runtime.MemStats
	// Twice: the first GC moves sync.Pools' contents to their victim
	// caches, the second frees them; one alone let the second reading
	// drop below the first (a negative "held", shown as 1.8e19).
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := New(steps, 1)
	for id := int64(0); id < int64(len(rec.shards)); id++ {
		sh := rec.Shard(id)
		sh.Started(time.Millisecond)
		if sent == sendNone {
			continue
		}
		sh.Record(0, sample.OK, 3*time.Millisecond)
		sh.Record(0, sample.ServerError, 5*time.Millisecond)
		if sent != sendAll {
			continue
		}
		for step := 0; step < n; step++ {
			for _, d := range spread {
				sh.Record(step, sample.OK, d)
			}
			sh.Record(step, sample.ServerError, 5*time.Millisecond)
			sh.Record(step, sample.Timeout, 30*time.Second)
		}
	}
	for i := 0; i < 3; i++ {
		rec.Tick(float64(i), 1)
	}
	runtime.GC()
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
					held1, snap1 = stepCost(1, sendFirst)
					held, snap = stepCost(n, sendFirst)
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
	held1, snap1 := stepCost(1, sendFirst)
	held, snap := stepCost(1001, sendFirst)
	perHeld := (float64(held) - float64(held1)) / 1000
	perSnap := (float64(snap) - float64(snap1)) / 1000
	t.Logf("per idle step with 16 shards: %.0f B held, %.0f B per snapshot", perHeld, perSnap)
	if perHeld > limit || perSnap > limit {
		t.Errorf("an idle step costs %.0f B held and %.0f B per snapshot, want at most %d", perHeld, perSnap, limit)
	}
}

// sentCost is what a sent step costs: the heap it holds in each shard it
// records into, and what one snapshot allocates for it. With n = 1 that is
// the recorder with its one step sent less the one with it never sent;
// above, the figure at n less the one at 1, over n-1 steps.
func sentCost(n, shards int) (heldPerShard, snap float64) {
	if n == 1 {
		h0, s0 := stepCost(1, sendNone)
		h1, s1 := stepCost(1, sendAll)
		return (float64(h1) - float64(h0)) / float64(shards), float64(s1) - float64(s0)
	}
	h1, s1 := stepCost(1, sendAll)
	hn, sn := stepCost(n, sendAll)
	return (float64(hn) - float64(h1)) / float64((n-1)*shards), (float64(sn) - float64(s1)) / float64(n-1)
}

// BenchmarkSentSteps reports the memory each sent request step costs the
// recorder, with latencies spread over two decades (spread) and a few
// failures, with the shards set to 2 and 16: bytes held in each shard the
// step records into, and bytes one snapshot allocates for the step.
func BenchmarkSentSteps(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		for _, shards := range []int{2, 16} {
			b.Run(fmt.Sprintf("steps=%d/shards=%d", n, shards), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(shards))
				var held, snap float64
				for i := 0; i < b.N; i++ {
					held, snap = sentCost(n, shards)
				}
				b.ReportMetric(held, "held-B/sent-step/shard")
				b.ReportMetric(snap, "snapshot-B/sent-step")
			})
		}
	}
}

// A sent request step with latencies spanning two decades holds at most
// 64 KiB in each shard it records into, even with 16 shards: plans
// imported from recordings send hundreds of steps, and two dense
// histograms of 184 KB per step and shard took 0.6 GB for 1,000 steps on
// 2 cores (6 GB on 16). A snapshot allocates no histogram per step, only
// the step's two encoded latencies (what result.LatencyOf allocates) and
// small change.
func TestSentStepCost(t *testing.T) {
	const shards = 16
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(shards))
	const limit = 64 << 10
	h := result.NewHistogram()
	for _, d := range spread {
		h.RecordValue(d.Microseconds())
	}
	h.RecordValue(5000)
	h.RecordValue(30_000_000)
	// Allocation counts move with what the GC emptied from sync.Pools in
	// between (an encoding allocated 189 KB in one round and 803 KB in the
	// next, and a CI run failed on that): each figure is the least of five
	// rounds, held the median.
	const rounds = 5
	perEncode, snap := math.Inf(1), math.Inf(1)
	helds := make([]float64, 0, rounds)
	for r := 0; r < rounds; r++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := 0; i < 4; i++ {
			result.LatencyOf(h)
		}
		runtime.ReadMemStats(&after)
		perEncode = min(perEncode, float64(after.TotalAlloc-before.TotalAlloc)/4)
		hr, sr := sentCost(101, shards)
		helds = append(helds, hr)
		snap = min(snap, sr)
	}
	slices.Sort(helds)
	held := helds[rounds/2]
	t.Logf("per sent step with %d shards: %.0f B held per shard, %.0f B per snapshot (%.0f B per encoded latency)", shards, held, snap, perEncode)
	if held > limit {
		t.Errorf("a sent step holds %.0f B in each shard, want at most %d", held, limit)
	}
	if snap > 2*perEncode+limit {
		t.Errorf("a snapshot allocates %.0f B per sent step, want at most two encodings (%.0f B each) and %d", snap, perEncode, limit)
	}
}
