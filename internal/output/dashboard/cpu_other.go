//go:build !linux

package dashboard

import "time"

// timed runs f and says how long it took: wall time, where no thread CPU
// time is to be had (only Linux gives it).
func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
