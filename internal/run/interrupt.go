package run

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// Interrupt is the cause a session cancels a run's context with: the
// signal that stopped it, so what the run writes names it (a CI job's
// SIGTERM is not a Ctrl-C).
type Interrupt struct{ Signal os.Signal }

func (i Interrupt) Error() string { return "interrupted (" + SignalName(i.Signal) + ")" }

// SignalName is how messages call sig: "Ctrl-C" for an interrupt (what
// a user at a terminal pressed), "SIGTERM" for a termination request.
func SignalName(sig os.Signal) string {
	switch sig {
	case nil, os.Interrupt:
		return "Ctrl-C"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// InterruptName is what stopped ctx: the signal a session gave as its
// cause (Interrupt), else Ctrl-C, the one way a user stops a run.
func InterruptName(ctx context.Context) string {
	var i Interrupt
	if errors.As(context.Cause(ctx), &i) {
		return SignalName(i.Signal)
	}
	return "Ctrl-C"
}
