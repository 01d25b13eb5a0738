// Command stampede is a load-testing tool: it runs a YAML plan of HTTP
// workflows against a target, measures truthfully, and reports.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/session"
)

// Exit codes, documented in the README; the session owns them.
const (
	exitOK        = session.ExitOK
	exitThreshold = session.ExitThreshold
	exitUsage     = session.ExitUsage
	exitRun       = session.ExitRun
)

// exitError carries an exit code up to main without printing twice.
type exitError = session.ExitError

func fail(code int, err error) error { return session.Fail(code, err) }

func main() {
	pr := session.Process{
		Stdout: os.Stdout, Stderr: os.Stderr,
		LookupEnv: os.LookupEnv, Environ: os.Environ,
		Notify: notify, Exit: os.Exit, SetGCPercent: debug.SetGCPercent, Version: buildVersion(),
	}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		// A GOMAXPROCS the user set is theirs to keep; otherwise an
		// open model's loops may run with a P to spare.
		pr.SetMaxProcs, pr.DefaultMaxProcs = runtime.GOMAXPROCS, runtime.SetDefaultGOMAXPROCS
	}
	os.Exit(mainCode(pr))
}

// notify delivers Ctrl-C and SIGTERM to c until stop is called.
func notify(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return func() { signal.Stop(c) }
}

func mainCode(pr session.Process) (code int) {
	defer func() {
		// A bug must not reach the user as a stack trace: one sentence, and
		// the stack only where it helps a bug report.
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "stampede: internal error: %v\n(this is a bug; set STAMPEDE_DEBUG=1 for details)\n", p)
			pr.WriteTerminationMessage(exitRun, fmt.Errorf("internal error: %v", p))
			if os.Getenv("STAMPEDE_DEBUG") != "" {
				os.Stderr.Write(debug.Stack())
			}
			code = exitRun
		}
	}()
	followCoordinator()
	root := newRoot(pr)
	root.SetOut(os.Stdout)
	root.SetErr(os.Stderr)
	root.SetArgs(os.Args[1:])
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(os.Stderr, "stampede:", ee.Err)
		}
		pr.WriteTerminationMessage(ee.Code, ee.Err)
		return ee.Code
	}
	// Cobra's own errors: unknown command or flag.
	fmt.Fprintln(os.Stderr, "stampede:", err)
	pr.WriteTerminationMessage(exitUsage, err)
	fmt.Fprintln(os.Stderr, "Run 'stampede --help' for usage.")
	return exitUsage
}

// followCoordinator makes a --workers worker end when its coordinator
// does: its stdin is the coordinator's pipe, which ends however the
// coordinator dies. The variable is removed, so nothing this process
// starts takes it for its own.
func followCoordinator() {
	if os.Getenv(session.CoordinatorEnv) != "1" {
		return
	}
	os.Unsetenv(session.CoordinatorEnv)
	go func() {
		// Any end of stdin, an error included, means the coordinator is gone.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(exitRun)
	}()
}

// extraCommands lets each command live in its own file: a file adds its
// constructor here from init, and the root picks it up.
var extraCommands []func(session.Process) *cobra.Command

func newRoot(pr session.Process) *cobra.Command {
	root := &cobra.Command{
		Use:   "stampede",
		Short: "Load testing that tells the truth and finds the bottleneck",
		Long: `stampede runs YAML plans of multi-step HTTP workflows against a target,
in a closed (virtual users) or open (arrival rate) model, and reports
latencies from HDR histograms free of coordinated omission, every failure
in exactly one class, per-step breakdowns and per-second series.

Exit codes: 0 all thresholds passed; 1 a threshold failed; 2 bad usage or
invalid plan; 3 the run could not complete (target unreachable at start,
interrupted, or a generator fault); 4 (capacity only) the capacity is
undetermined: the levels that bound it were generator-bound.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(pr), newValidateCmd(pr), newReportCmd(), newDemoCmd(pr))
	addVersion(root, pr.Version)
	for _, mk := range extraCommands {
		root.AddCommand(mk(pr))
	}
	registerValueCompletion(root) // completion.go
	// A CPU profile of the generator is how speed work starts; it is a
	// hidden flag because users rarely need it.
	var profile string
	var profFile *os.File
	root.PersistentFlags().StringVar(&profile, "cpuprofile", "", "write a Go CPU profile to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	addAllowFiles(root.PersistentFlags())
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if profile == "" {
			return nil
		}
		f, err := os.Create(profile)
		if err != nil {
			return fail(exitUsage, err)
		}
		profFile = f
		return pprof.StartCPUProfile(f)
	}
	cobra.OnFinalize(func() {
		if profFile != nil {
			pprof.StopCPUProfile()
			profFile.Close()
		}
	})
	return root
}
