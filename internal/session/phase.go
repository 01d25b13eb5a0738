package session

import (
	"fmt"
	"sync/atomic"

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
// teardown, which it does not stop: the load is over, and the teardown
// cleans up what the test made.
func TeardownStopNote() string {
	return fmt.Sprintf("the load is over; the teardown goes on to clean up, for %v at most (Ctrl-C again to quit now and cut it off)", run.TeardownTimeout)
}

// stopNote is the first Ctrl-C's note for e's phase.
func (s *Session) stopNote(e Executor) string {
	if p, ok := e.(Phased); ok {
		switch p.Phase() {
		case run.PhaseSetup:
			return SetupStopNote
		case run.PhaseTeardown:
			return TeardownStopNote()
		}
	}
	return s.o.StopNote
}

// phaseOf keeps the phase a run reports through run.Options.OnPhase; an
// executor embeds it to be Phased.
type phaseOf struct{ p atomic.Int32 }

func (f *phaseOf) set(p run.Phase) { f.p.Store(int32(p)) }

// Phase is the part of the test that runs now.
func (f *phaseOf) Phase() run.Phase { return run.Phase(f.p.Load()) }
