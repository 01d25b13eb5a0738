package dist

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// segResult is a consistent result of segment index of count holding n
// successful requests with latencies base, base+1, ... µs.
func segResult(t *testing.T, index, count int, n int64, base int64) *result.Result {
	t.Helper()
	h := result.NewHistogram()
	for i := int64(0); i < n; i++ {
		if err := h.RecordValue(base + i); err != nil {
			t.Fatal(err)
		}
	}
	lat := result.LatencyOf(h)
	r := &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: "test"},
		Plan:   result.PlanInfo{Name: "p", SHA256: "abcd", Source: "thresholds: [\"error_rate < 1%\"]\n"},
		Run: result.RunInfo{Model: "open", LatencyFrom: "intended", Segment: result.Segment{Index: index, Count: count},
			Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Ended: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC), DurationS: 2},
		Totals: result.Totals{Requests: n, Successful: n, ByClass: map[string]int64{}, LatencyOK: lat, LatencyAll: lat},
		Steps: []result.Step{{Scenario: "s", Name: "GET /", Requests: n, Successful: n, ByClass: map[string]int64{},
			LatencyOK: lat, LatencyAll: lat}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
	if err := r.Check(); err != nil {
		t.Fatalf("test result inconsistent: %v", err)
	}
	return r
}
