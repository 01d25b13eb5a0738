//go:build !linux

package run

import "time"

// preciseSleeper has no timerfd outside Linux: newPreciseSleeper reports
// none, and the open-model dispatcher waits on a Go timer, whose wake-up
// may be up to a millisecond late when the scheduler is idle. The lateness
// still counts in the latency (it is measured from the intended start),
// so results stay true; they are only less tight.
type preciseSleeper struct{}

func newPreciseSleeper() *preciseSleeper { return nil }

func (p *preciseSleeper) sleep(time.Duration) bool { return false }

func (p *preciseSleeper) close() {}
