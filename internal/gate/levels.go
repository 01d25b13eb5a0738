package gate

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/result"
)

// GoodputRPS is successful requests per second of measured time: under
// overload a fast 503 still completes, so only successes show whether more
// load bought more work.
func GoodputRPS(r *result.Result) float64 {
	if r == nil || r.Run.DurationS <= 0 {
		return 0
	}
	return float64(r.Totals.Successful) / r.Run.DurationS
}

// LevelIndicators judges a multi-level run as a whole: the last two levels
// that ran, where the load grew, show whether throughput still followed it
// (an API where 400 or 1,000 users both gave 1.6k RPS).
func LevelIndicators(levels []result.Level) []result.Indicator {
	var ran []result.Level
	for _, l := range levels {
		if l.Result != nil && l.Value > 0 {
			ran = append(ran, l)
		}
	}
	if len(ran) < 2 {
		return nil
	}
	a, b := ran[len(ran)-2], ran[len(ran)-1]
	if b.Value < a.Value*levelLoadGrowth {
		return nil
	}
	ra, rb := GoodputRPS(a.Result), GoodputRPS(b.Result)
	pa, pb := a.Result.Totals.LatencyOK.P95US, b.Result.Totals.LatencyOK.P95US
	if ra <= 0 || rb > ra*(1+flatThroughput) || pa <= 0 || float64(pb) < float64(pa)*levelLatencyGrowth {
		return nil
	}
	return []result.Indicator{{
		ID: "saturated", Severity: SeverityWarn,
		Message: fmt.Sprintf("Saturated: %s went from %g to %g (x%.1f) but successful throughput went from %.1f to %.1f req/s while p95 rose from %s to %s - the target's capacity is near %.0f req/s; more load only adds latency",
			a.Vary, a.Value, b.Value, b.Value/a.Value, ra, rb, formatDuration(pa), formatDuration(pb), max(ra, rb)),
		Evidence: map[string]float64{
			"level_before": a.Value, "level_after": b.Value, "ok_rps_before": ra, "ok_rps_after": rb,
			"p95_before_us": float64(pa), "p95_after_us": float64(pb),
		},
	}}
}

// Headline is the indicator a one-line table shows for a run: its first
// warning, or "-" when there is none.
func Headline(ins []result.Indicator) string {
	for _, in := range ins {
		if in.Severity == SeverityWarn {
			return in.ID
		}
	}
	return "-"
}
