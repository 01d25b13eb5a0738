package session

import (
	"context"
	"io"
	"os"

	"github.com/stampede-load/stampede/internal/run"
)

// Process is what the binary's main hands the library: its streams, its
// environment, its signals and its exit. Only main touches the process
// itself, so a command's whole behaviour can be driven from a test and no
// library code reads or changes process-wide state behind its caller.
type Process struct {
	Stdout, Stderr io.Writer
	// LookupEnv reads one environment variable (os.LookupEnv in main).
	LookupEnv func(string) (string, bool)
	// Environ is the environment a child process inherits.
	Environ func() []string
	// Notify starts delivering Ctrl-C and SIGTERM to c until stop is
	// called (signal.Notify in main). Nil: no signal is ever delivered.
	Notify func(c chan<- os.Signal) (stop func())
	// Exit ends the process (os.Exit in main); the second Ctrl-C calls it.
	Exit func(code int)
	// SetGCPercent sets the process's GOGC (debug.SetGCPercent in main);
	// nil leaves it.
	SetGCPercent func(percent int) int
	// SetMaxProcs and DefaultMaxProcs change the process's GOMAXPROCS
	// (runtime.GOMAXPROCS and runtime.SetDefaultGOMAXPROCS in main) so
	// that an open model's loops run with a P to spare (run.MaxProcs);
	// nil leaves it, as main does when the user set GOMAXPROCS.
	SetMaxProcs     func(n int) int
	DefaultMaxProcs func()
	// Version is the binary's version, recorded in every result.
	Version string
}

// getenv is LookupEnv's value, empty when unset or when there is no
// environment.
func (p Process) getenv(name string) string {
	if p.LookupEnv == nil {
		return ""
	}
	v, _ := p.LookupEnv(name)
	return v
}

func (p Process) lookupEnv(name string) (string, bool) {
	if p.LookupEnv == nil {
		return "", false
	}
	return p.LookupEnv(name)
}

func (p Process) environ() []string {
	if p.Environ == nil {
		return nil
	}
	return p.Environ()
}

// signals is the channel Notify fills, and the function that stops it.
func (p Process) signals() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 2)
	if p.Notify == nil {
		return ch, func() {}
	}
	return ch, p.Notify(ch)
}

// SignalContext is a context that Ctrl-C or SIGTERM cancels, for work
// that stops at the first signal (the demo target, creating a Job).
func (p Process) SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch, stop := p.signals()
	go func() {
		select {
		case <-ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() { stop(); cancel() }
}

// options is the session's Options for this process: its stderr, its
// signals and its exit, unless o gives its own.
func (p Process) options(o Options) Options {
	if o.Stderr == nil {
		o.Stderr = p.Stderr
	}
	if o.Exit == nil {
		o.Exit = p.Exit
	}
	if o.Notify == nil {
		o.Notify = p.Notify
	}
	return o
}

// Stdio is p writing to stdout and stderr: a command's own streams.
func (p Process) Stdio(stdout, stderr io.Writer) Process {
	p.Stdout, p.Stderr = stdout, stderr
	return p
}

// maxProcs is how a run may change GOMAXPROCS (nil: it may not).
func (p Process) maxProcs() *run.MaxProcs {
	if p.SetMaxProcs == nil {
		return nil
	}
	return &run.MaxProcs{Set: p.SetMaxProcs, Default: p.DefaultMaxProcs}
}
