package run

import "testing"

// A failure that makes the run partial after the stages ended (a stop
// that was not partial) still marks it partial, saying why: before, the
// first stop's outcome won and an event loop whose epoll set failed in
// the grace left a run reported complete.
func TestStopMarksAPartialFailureAfterTheStagesEnded(t *testing.T) {
	s := newStopper()
	s.stop("", false) // stages over
	first, _, _ := s.outcome()
	s.stop("evloop: the event loop failed: epoll_wait: invalid argument; the run stopped", true)
	stopped, partial, why := s.outcome()
	if partial != "evloop: the event loop failed: epoll_wait: invalid argument; the run stopped" {
		t.Errorf("partial reason %q, want the loop's failure", partial)
	}
	if !stopped.Equal(first) || why != "" {
		t.Errorf("stopped at %v (why %q), want the first stop's time %v and no reason", stopped, why, first)
	}
}

// The first partial reason stays: a later one does not replace it.
func TestStopKeepsTheFirstPartialReason(t *testing.T) {
	s := newStopper()
	s.stop("interrupted (Ctrl-C)", true)
	s.stop("memory budget hit", true)
	if _, partial, _ := s.outcome(); partial != "interrupted (Ctrl-C)" {
		t.Errorf("partial reason %q, want the first", partial)
	}
	if !s.stopping() {
		t.Error("the stop did not close soft")
	}
}
