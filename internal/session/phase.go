package session

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/run"
)

// Phased is an executor that says which part of the test runs now (the
// plan's setup, its load, its teardown), so the first Ctrl-C says what it
// does there rather than promise the load's grace period everywhere.
type Phased interface {
	Phase() run.Phase
}

// SetupStopNote is what the first Ctrl-C prints during the plan's setup.
const SetupStopNote = "stopping: the setup is cut off and no load will be sent (Ctrl-C again to quit now)"

// TeardownStopNote is what the first Ctrl-C prints during the plan's
// teardown after the load, which it does not stop: the teardown cleans up
// what the test made, within what is left of run.TeardownTimeout.
func TeardownStopNote(left time.Duration) string {
	return fmt.Sprintf("the load is over; the teardown goes on to clean up, for %v at most (Ctrl-C again to quit now and cut it off)", roundLeft(left))
}

// CleanupStopNote is the first Ctrl-C's note during a teardown that runs
// with no load sent (the setup failed, or was cut off).
func CleanupStopNote(left time.Duration) string {
	return fmt.Sprintf("no load was sent; the teardown goes on to clean up what the setup made, for %v at most (Ctrl-C again to quit now and cut it off)", roundLeft(left))
}

// teardownStartNote is said as the teardown starts after a Ctrl-C
// stopped the setup or the load, which would otherwise look like a
// process that ignores it.
func teardownStartNote(cleanup bool) string {
	what := "the teardown runs now to clean up"
	if cleanup {
		what = "the teardown runs now to clean up what the setup made"
	}
	return fmt.Sprintf("%s, for %v at most (Ctrl-C again to quit now and cut it off)", what, run.TeardownTimeout)
}

// roundLeft is the teardown's time left as a note says it: whole seconds,
// and never below one while it runs.
func roundLeft(left time.Duration) time.Duration {
	return max(left.Round(time.Second), time.Second)
}

// stopNote is the first Ctrl-C's note for e's phase.
func (s *Session) stopNote(e Executor) string {
	if p, ok := e.(Phased); ok {
		ph := p.Phase()
		left := run.TeardownTimeout
		if w, ok := e.(phaseWatcher); ok {
			left -= w.inPhase()
		}
		switch ph {
		case run.PhaseSetup:
			return SetupStopNote
		case run.PhaseTeardown:
			return TeardownStopNote(left)
		case run.PhaseCleanup:
			return CleanupStopNote(left)
		}
	}
	return s.o.StopNote
}

// tearingDown says e runs its teardown now, or has begun it: a quit then
// cuts it off.
func tearingDown(e Executor) bool {
	p, ok := e.(Phased)
	return ok && (p.Phase() == run.PhaseTeardown || p.Phase() == run.PhaseCleanup)
}

// phaseWatcher is an executor (through phaseOf) that tells the session
// as it enters a phase, and how long it has been in it.
type phaseWatcher interface {
	watchPhase(func(run.Phase))
	inPhase() time.Duration
}

// phaseOf keeps the phase a run reports through run.Options.OnPhase; an
// executor embeds it to be Phased.
type phaseOf struct {
	p     atomic.Int32
	since atomic.Int64 // when p was entered, Unix nanoseconds
	watch atomic.Pointer[func(run.Phase)]
}

func (f *phaseOf) set(p run.Phase) {
	f.since.Store(time.Now().UnixNano())
	f.p.Store(int32(p))
	if w := f.watch.Load(); w != nil {
		(*w)(p)
	}
}

// Phase is the part of the test that runs now.
func (f *phaseOf) Phase() run.Phase { return run.Phase(f.p.Load()) }

func (f *phaseOf) watchPhase(w func(run.Phase)) { f.watch.Store(&w) }

// inPhase is how long the current phase has run; 0 before any.
func (f *phaseOf) inPhase() time.Duration {
	ns := f.since.Load()
	if ns == 0 {
		return 0
	}
	return time.Since(time.Unix(0, ns))
}
