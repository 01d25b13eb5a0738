package run

import (
	"sync"

	"github.com/stampede-load/stampede/internal/result"
)

// Handle is a caller's view of a run in progress: once the load has
// started it gives partial results of the run so far, for a caller that
// must save what was measured without waiting for the end (a second
// Ctrl-C), streams the run elsewhere, or measures part of it (a level's
// hold). A Handle watches one run; its zero value is ready to use.
type Handle struct {
	mu      sync.Mutex
	started chan struct{}
	r       *runner
}

func (h *Handle) startedCh() chan struct{} {
	if h.started == nil {
		h.started = make(chan struct{})
	}
	return h.started
}

// Started is closed once the run's load has started; Snapshot returns nil
// before then.
func (h *Handle) Started() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.startedCh()
}

// Snapshot is the run so far, marked partial with reason. It is nil
// until the load has started. Once the load is over and only its teardown
// runs, it is the load's complete result, its teardown marked cut off
// with reason (when there is one).
func (h *Handle) Snapshot(reason string) *result.Result {
	h.mu.Lock()
	r := h.r
	h.mu.Unlock()
	if r == nil {
		return nil
	}
	if res := r.afterLoad(reason); res != nil {
		return res // the load is over: complete, whatever the reason
	}
	// A snapshot that is written (a quit) adds up to its totals, the open
	// interval included; one streamed to the sinks (no reason) keeps to
	// closed intervals, which a sink may write once.
	res := r.build(true)
	if reason != "" {
		res = r.buildCheckpoint()
	}
	res.Run.Partial = true
	res.Run.PartialReason = reason
	return res
}

func (h *Handle) attach(r *runner) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.r != nil {
		panic("run: a Handle watches one run")
	}
	h.r = r
	close(h.startedCh())
}
