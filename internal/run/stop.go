package run

import (
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// stopper is a run's stop: when new work could no longer start, and why.
// Every driver and the connection populations watch soft, closed then.
type stopper struct {
	soft     chan struct{}
	softOnce sync.Once
	stopMu   sync.Mutex
	stopped  time.Time // when no new work could start any more
	stopWhy  string
	partial  string
	// loadRes is the load's result while its teardown runs (loadOver).
	loadRes *result.Result
}

func newStopper() stopper { return stopper{soft: make(chan struct{})} }

// stop ends the starting of new work; the first reason given wins, and
// the first partial reason is kept even when it comes after a stop that
// was not partial: a failure in the grace after the stages ended (an
// event loop's epoll set) still left the run's load unsent.
func (s *stopper) stop(reason string, partial bool) {
	s.stopMu.Lock()
	if s.stopped.IsZero() {
		s.stopped = time.Now()
		if !partial {
			s.stopWhy = reason
		}
	}
	if partial && s.partial == "" {
		s.partial = reason
	}
	s.stopMu.Unlock()
	s.softOnce.Do(func() { close(s.soft) })
}

// outcome is when new work stopped (zero: not yet), the reason a partial
// run gives, and the reason a complete run stopped early.
func (s *stopper) outcome() (stopped time.Time, partial, why string) {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	return s.stopped, s.partial, s.stopWhy
}

// stopping reports whether the run has stopped starting new work.
func (s *stopper) stopping() bool {
	select {
	case <-s.soft:
		return true
	default:
		return false
	}
}

// mayStart reports whether new users may still start: the run has not
// been stopped and the stages have not ended.
func (s *stopper) mayStart(end time.Time) bool {
	return !s.stopping() && time.Now().Before(end)
}

// sleepUntil waits for t or the soft stop; false means stop.
func (s *stopper) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return !s.stopping()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-s.soft:
		return false
	}
}

// keepLoad keeps the load's result for the time of its teardown.
func (s *stopper) keepLoad(res *result.Result) {
	s.stopMu.Lock()
	s.loadRes = res
	s.stopMu.Unlock()
}

// keptLoad is the load's result once its teardown may run; nil before.
func (s *stopper) keptLoad() *result.Result {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	return s.loadRes
}
