package gate

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// rps counts the requests the server handled, not the arrivals an open
// model dropped: 100 sent and 500 dropped over 10 s is 10/s. Before, it
// was 60/s, and "rps > 50" passed a run that sent a sixth of that.
func TestRPSLeavesOutDroppedArrivals(t *testing.T) {
	r := &result.Result{
		Run: result.RunInfo{DurationS: 10, Model: "open"},
		Totals: result.Totals{Requests: 600, Successful: 100, Failed: 500,
			ByClass: map[string]int64{"dropped": 500}, LatencyAll: result.Latency{Count: 100}},
	}
	got := Evaluate(r, []string{"rps > 50"})
	if len(got) != 1 || got[0].Pass || got[0].Value != "10.00/s" {
		t.Fatalf("rps > 50 over 100 sent and 500 dropped in 10s: %+v, want a failure at 10.00/s", got)
	}
}
