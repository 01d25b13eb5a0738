package session

import (
	"context"
	"os"
	"sync"
)

// segmentSignals is what one segment process of a level hears from the
// coordinator: every signal passed on to it, in order and each once, or
// the one that ended the level's context when the session stopped the
// level itself. The process is known only once exec has started it, so
// a signal that comes before is kept and sent from exec's Cancel, which
// ending ctx makes exec call with the process started.
type segmentSignals struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	proc  *os.Process
	queue []os.Signal
}

func newSegmentSignals(parent context.Context) *segmentSignals {
	ctx, cancel := context.WithCancel(parent)
	return &segmentSignals{parent: parent, ctx: ctx, cancel: cancel}
}

// pass sends sig to the segment: now if it runs, else once it does.
func (s *segmentSignals) pass(sig os.Signal) {
	s.mu.Lock()
	s.queue = append(s.queue, sig)
	if s.proc != nil {
		// The error is ignored: a segment that has just exited cannot hear
		// it, and needs not (os.ErrProcessDone). The process is this
		// one's own child, still waited for by exec, and the signals are
		// the session's interrupts, so permission, a released process or
		// an unknown signal cannot be why a send fails; and a segment
		// that missed a second Ctrl-C still ends at its level's end.
		_ = s.proc.Signal(sig)
	}
	s.mu.Unlock()
	s.cancel()
}

// attach is exec's Cancel: it sends what was passed on so far, or, when
// nothing was, the signal that ended the parent context.
func (s *segmentSignals) attach(p *os.Process) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc = p
	if len(s.queue) == 0 {
		return p.Signal(stopSignal(s.parent))
	}
	var first error
	for _, sig := range s.queue {
		if err := p.Signal(sig); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// stop releases the context once the segment has ended.
func (s *segmentSignals) stop() { s.cancel() }
