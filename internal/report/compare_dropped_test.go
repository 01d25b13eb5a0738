package report

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// The throughput compare judges per interval is the requests that ended,
// as the Throughput row's is (result.Totals.Timed): an interval of 100
// answered and 500 dropped arrivals served 100/s, not 600/s. Before, a run
// that dropped arrivals looked as if it had kept its throughput.
func TestCompareIntervalThroughputLeavesOutDropped(t *testing.T) {
	r := &result.Result{Run: result.RunInfo{DurationS: 2}, Series: result.Series{
		IntervalS: 1, T: []float64{0, 1}, OK: []int64{100, 100},
		P50US: []int64{1000, 1000}, P95US: []int64{2000, 2000}, P99US: []int64{3000, 3000},
		Failed: map[string][]int64{"dropped": {500, 500}, "server_error": {10, 10}},
	}}
	iv := intervalsOf(r)
	for i, v := range iv.aligned[3] {
		if v != 110 {
			t.Errorf("interval %d: %v requests/s, want 110 (100 ok and 10 server errors; the 500 dropped were never sent)", i, v)
		}
	}
}
