package metrics

import (
	"math"
	"math/rand"
	"runtime"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// sampleValues draws n latencies in µs, clamped as toUS does: log-uniform
// over the whole range, with the edges of buckets and of the range mixed in.
func sampleValues(rng *rand.Rand, n int) []int64 {
	out := make([]int64, 0, n)
	for len(out) < n {
		var v int64
		switch rng.Intn(4) {
		case 0:
			v = int64(math.Exp(rng.Float64() * math.Log(float64(result.HistHighUS))))
		case 1:
			p := uint(rng.Intn(33))
			v = int64(1)<<p + int64(rng.Intn(3)) - 1
		case 2:
			v = []int64{0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, result.HistHighUS - 1, result.HistHighUS, result.HistHighUS + 1}[rng.Intn(13)]
		default:
			v = 1000 + rng.Int63n(100_000)
		}
		out = append(out, toUS(time.Duration(v)*time.Microsecond))
	}
	return out
}

// A snapshot's latencies, per step and in total, are exactly those of
// histograms fed every value directly, across shards, for steps with only
// successes, only failures, both, and none.
func TestSnapshotLatenciesExact(t *testing.T) {
	steps := []StepInfo{{Name: "ok"}, {Name: "failing"}, {Name: "mixed"}, {Name: "idle"}}
	rec := New(steps, 1)
	rng := rand.New(rand.NewSource(12))
	wantOK := []*hdr.Histogram{result.NewHistogram(), result.NewHistogram(), result.NewHistogram(), result.NewHistogram()}
	wantAll := []*hdr.Histogram{result.NewHistogram(), result.NewHistogram(), result.NewHistogram(), result.NewHistogram()}
	totOK, totAll := result.NewHistogram(), result.NewHistogram()
	for id := int64(0); id < 8; id++ {
		sh := rec.Shard(id)
		for _, us := range sampleValues(rng, 3000) {
			step := rng.Intn(3)
			class := sample.OK
			if step == 1 || (step == 2 && rng.Intn(5) == 0) {
				class = sample.ServerError
			}
			sh.Record(step, class, time.Duration(us)*time.Microsecond)
			wantAll[step].RecordValue(us)
			totAll.RecordValue(us)
			if class == sample.OK {
				wantOK[step].RecordValue(us)
				totOK.RecordValue(us)
			}
		}
	}
	snap := rec.Snapshot()
	for i, st := range snap.Steps {
		if w := result.LatencyOf(wantOK[i]); st.LatencyOK != w {
			t.Errorf("step %s: latency_ok %+v, want %+v", st.Name, st.LatencyOK, w)
		}
		if w := result.LatencyOf(wantAll[i]); st.LatencyAll != w {
			t.Errorf("step %s: latency_all %+v, want %+v", st.Name, st.LatencyAll, w)
		}
	}
	if w := result.LatencyOf(totOK); snap.Totals.LatencyOK != w {
		t.Errorf("totals latency_ok %+v, want %+v", snap.Totals.LatencyOK, w)
	}
	if w := result.LatencyOf(totAll); snap.Totals.LatencyAll != w {
		t.Errorf("totals latency_all %+v, want %+v", snap.Totals.LatencyAll, w)
	}
	// A second snapshot, after the scratch histograms were reused, agrees.
	if again := rec.Snapshot(); again.Steps[2].LatencyAll != snap.Steps[2].LatencyAll || again.Totals.LatencyAll != snap.Totals.LatencyAll {
		t.Errorf("a second snapshot differs")
	}
}

// BenchmarkRecordSpread records a realistic spread (1–100 ms) into one
// step, successes and a few failures, as requests do.
func BenchmarkRecordSpread(b *testing.B) {
	rec := New([]StepInfo{{Name: "a"}}, 1)
	sh := rec.Shard(1)
	lat := make([]time.Duration, 1024)
	for i := range lat {
		lat[i] = spread[i%len(spread)]
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		class := sample.OK
		if i&63 == 0 {
			class = sample.ServerError
		}
		sh.Record(0, class, lat[i&1023])
	}
}

// BenchmarkSnapshotSentSteps times one snapshot (each checkpoint, and the
// final result) of a plan of 1,000 sent steps on 2 shards.
func BenchmarkSnapshotSentSteps(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	steps := make([]StepInfo, 1000)
	rec := New(steps, 1)
	for id := int64(0); id < 2; id++ {
		sh := rec.Shard(id)
		for i := range steps {
			for _, d := range spread {
				sh.Record(i, sample.OK, d)
			}
			sh.Record(i, sample.ServerError, 5*time.Millisecond)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec.Snapshot()
	}
}
