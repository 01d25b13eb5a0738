package session

import (
	"errors"
	"fmt"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/run"
)

// Exit codes, documented in the README.
const (
	ExitOK        = 0
	ExitThreshold = 1 // a threshold, an SLO or a gate failed
	ExitUsage     = 2 // bad usage or an invalid plan
	ExitRun       = 3 // the run could not complete
)

// ExitError carries an exit code up to main without printing twice: Err
// is what the user reads, nil when everything was said already.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Fail is err with the exit code it ends the process with.
func Fail(code int, err error) error { return &ExitError{Code: code, Err: err} }

// VerdictErr is the exit of a verdict: nil for a pass.
func VerdictErr(v gate.Verdict) error {
	switch v {
	case gate.Incomplete:
		return Fail(ExitRun, nil)
	case gate.Fail:
		return Fail(ExitThreshold, nil)
	}
	return nil
}

// RunFailure is the exit of a run that could not complete; an unreachable
// target gets the question the user will have to ask next.
func RunFailure(err error) error {
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, run.ErrUnreachable) {
		return Fail(ExitRun, fmt.Errorf("%v\nNothing was sent. Is the target running, and is the address right?", err))
	}
	return Fail(ExitRun, err)
}
