package dist

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// BenchmarkCollectMerge1000 is the collector's end of a 1,000-pod run of
// one hour: 1,000 segment results decoded (as Extract does, after the
// gzip and base64) and merged into one. Segment 0 carries the monitors
// (only it runs them); every segment carries 50 HTTP steps, 3 connection
// scenarios and 3,600 one-second intervals. It reports the wall time and
// the heap the 1,000 decoded results and the merge hold at once. Run it
// once, it takes a while:
//
//	go test ./internal/dist -run '^$' -bench CollectMerge1000 -benchtime 1x
//
// docs/distributed.md has the figures.
func BenchmarkCollectMerge1000(b *testing.B) {
	segments := 1000
	// STAMPEDE_BENCH_SEGMENTS=100 for a shorter run of the same shape.
	if n, err := strconv.Atoi(os.Getenv("STAMPEDE_BENCH_SEGMENTS")); err == nil && n > 0 {
		segments = n
	}
	seg0 := bigResult(b)
	segN := *seg0
	segN.Monitors = nil
	raw0, _ := json.Marshal(seg0)
	rawN, _ := json.Marshal(&segN)
	var gz0, gzN bytes.Buffer
	Emit(&gz0, seg0)
	Emit(&gzN, &segN)
	b.Logf("segment result: %d KiB JSON with monitors (%d KiB in the log), %d KiB without (%d KiB in the log)",
		len(raw0)/1024, gz0.Len()/1024, len(rawN)/1024, gzN.Len()/1024)
	// Extract's own cost per segment, on the larger (monitor) log.
	t0 := time.Now()
	if _, err := Extract(bytes.NewReader(gzN.Bytes())); err != nil {
		b.Fatal(err)
	}
	b.Logf("one Extract (no monitors): %v", time.Since(t0).Round(time.Millisecond))
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		cpu0 := cpuTime()
		outs := make([]Outcome, segments)
		for k := range outs {
			raw := rawN
			if k == 0 {
				raw = raw0
			}
			r, err := result.Decode(raw)
			if err != nil {
				b.Fatal(err)
			}
			r.Run.Segment = result.Segment{Index: k, Count: segments}
			outs[k] = Outcome{Result: r}
			outs[k].Segment.Index, outs[k].Segment.Count = k, segments
		}
		decoded := time.Since(start)
		cpuDecoded := cpuTime()
		var held runtime.MemStats
		runtime.ReadMemStats(&held)
		m, err := Merge(outs)
		if err != nil {
			b.Fatal(err)
		}
		total := time.Since(start)
		cpuEnd := cpuTime()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if m.Run.Segment.Count != 1 || m.Totals.Requests != seg0.Totals.Requests*int64(segments) || m.Run.Partial {
			b.Fatalf("merged: segment %v, %d requests, partial %v", m.Run.Segment, m.Totals.Requests, m.Run.Partial)
		}
		b.ReportMetric(decoded.Seconds(), "s-decode")
		b.ReportMetric((total - decoded).Seconds(), "s-merge")
		b.ReportMetric((cpuDecoded - cpu0).Seconds(), "cpu-s-decode")
		b.ReportMetric((cpuEnd - cpuDecoded).Seconds(), "cpu-s-merge")
		b.ReportMetric(float64(held.HeapInuse-before.HeapInuse)/(1<<20), "MiB-held")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MiB-allocated")
		b.Logf("%d segments: CPU decode %v, merge %v; wall decode %v, merge %v; heap holding the decoded results %d MiB; %d MiB allocated in all",
			segments, (cpuDecoded - cpu0).Round(time.Millisecond), (cpuEnd - cpuDecoded).Round(time.Millisecond),
			decoded.Round(time.Millisecond), (total - decoded).Round(time.Millisecond),
			(held.HeapInuse-before.HeapInuse)>>20, (after.TotalAlloc-before.TotalAlloc)>>20)
	}
}

// cpuTime is this process's user and system CPU: on a machine shared with
// other work the wall time says more about the neighbours than the merge.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
