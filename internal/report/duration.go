package report

import (
	"math"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Duration formats a latency in microseconds as every report prints it.
func Duration(us int64) string { return result.FormatDuration(us) }

// runDuration prints a run's length to the whole second ("30s", "1m1s"),
// as the classic load-test report's Duration line does.
func runDuration(s float64) string {
	if s <= 0 || math.IsNaN(s) {
		return "0s"
	}
	return (time.Duration(math.Round(s)) * time.Second).String()
}
