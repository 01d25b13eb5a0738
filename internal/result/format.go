package result

import (
	"math"
	"time"
)

// FormatDuration formats a latency in microseconds the way the classic load-test report's
// reports do: Go's time.Duration, exact below a second (818.663ms, 697µs)
// and rounded to the millisecond above it (4.718s, 1m14s), because
// microsecond digits on multi-second latencies are noise that hides the
// figure. Reports and threshold verdicts share it so they print one value
// one way.
func FormatDuration(us int64) string {
	const maxUS = math.MaxInt64 / int64(time.Microsecond)
	us = max(min(us, maxUS), -maxUS)
	d := time.Duration(us) * time.Microsecond
	if d >= time.Second || d <= -time.Second {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
