package session

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/run"
)

// RunRequest is `stampede run`: its flags, as given.
type RunRequest struct {
	PlanFile string
	Out      string // -o; empty: stampede-<name>-<time>.json
	Demo     string // --demo
	Quiet    bool
	Monitors []string // --monitor
	Split    Split
	Failures Failures
	Engine   string // --engine
	Outputs  Outputs
	// AllowFiles is --allow-files: directories a plan may read files from.
	AllowFiles []string
	// WorkerArgs are the flags given to run that --workers passes on to
	// each worker as they were given.
	WorkerArgs []string
}

// Run runs a plan as `stampede run` does: in this process, one segment
// of it, or (Split.Workers) as local worker processes merged into one
// result. It prints the summary and says where the result is; the error
// carries the exit code.
func (pr Process) Run(r RunRequest) error {
	if err := checkEngineFlag(r.Engine); err != nil {
		return err
	}
	if r.Split.Workers > 0 {
		return pr.runWorkers(r)
	}
	p, err := r.Split.load(pr, r.PlanFile, r.AllowFiles)
	if err != nil {
		return err
	}
	if err := CheckFit(pr.Stderr, p, r.Split.processes()); err != nil {
		return err
	}
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return err
	}
	if r.Out == "" {
		r.Out = defaultOut(p, time.Now())
	}
	live := newLive(pr.Stderr, r.Quiet)
	// Closed at the end of the run, or by the second Ctrl-C before its
	// partial result is written.
	closeFailures := func() {}
	r.Outputs.Segment = r.Split.Segment
	oo, err := r.Outputs.open(pr)
	if err != nil {
		return err
	}
	oo.planStages(p.Load)
	// Fail before any load if the result cannot be written, and set aside
	// the open files and disk space its writes need, so a run that takes
	// every file descriptor or fills the disk still saves what it measured.
	s, err := Open(pr.options(Options{Out: r.Out, Need: resultNeed(p, len(run.PlanMonitors(p))+len(r.Monitors)),
		Note: live.note, OnQuit: func() { closeFailures() }, Sinks: oo.sinks, TestID: oo.testID}))
	if err != nil {
		closeSinks(oo.sinks)
		return err
	}
	defer s.Close()
	opts := run.Options{Version: pr.Version, TLS: tlsConf, Engine: r.Engine, MaxProcs: pr.maxProcs()}
	if closeFailures, err = pr.runOptions(&opts, p, r); err != nil {
		return err
	}
	baseURL, stopDemo, err := pr.startDemo(p, r.Demo, r.Quiet)
	if err != nil {
		return err
	}
	defer stopDemo()
	opts.BaseURL = baseURL
	opts.Progress = live.update
	stderr := pr.Stderr
	pr.tuneGC(p)
	oc := s.Run(&InProcess{Plan: p, Options: opts, Warn: func(msg string) { fmt.Fprintln(stderr, msg) }})
	live.done()
	closeFailures()
	return pr.printRun(oc, r)
}

// runOptions sets the segment, the monitors and the failure keeping of
// one process's run; the function returned closes the failure samples.
func (pr Process) runOptions(opts *run.Options, p *plan.Plan, r RunRequest) (func(), error) {
	if err := pr.applySplit(opts, r.Split, p); err != nil {
		return nil, err
	}
	if err := pr.monitorOptions(opts, p, r.Monitors); err != nil {
		return nil, err
	}
	return r.Failures.apply(opts, r.Out, pr.Stderr)
}

// printRun prints a finished run's summary and where its result went.
func (pr Process) printRun(oc *Outcome, r RunRequest) error {
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	if err := report.Text(pr.Stdout, oc.Result); err != nil {
		return Fail(ExitRun, err)
	}
	if oc.SaveErr != nil {
		return oc.Err()
	}
	fmt.Fprintf(pr.Stderr, "result saved to %s\n", r.Out)
	if r.Split.Emit {
		if err := dist.Emit(pr.Stdout, oc.Result); err != nil {
			return Fail(ExitRun, err)
		}
	}
	return oc.Err()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// defaultOut is the result file a run writes without -o.
func defaultOut(p *plan.Plan, now time.Time) string {
	name := unsafeName.ReplaceAllString(p.Name, "-")
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(p.File), filepath.Ext(p.File))
	}
	return fmt.Sprintf("stampede-%s-%s.json", name, now.Format("20060102-150405"))
}

// levelsOut names the result file as run does, with the command in it so
// a gates result is not taken for a single run's.
func levelsOut(p *plan.Plan, kind string, now time.Time) string {
	return strings.TrimSuffix(defaultOut(p, now), now.Format("20060102-150405")+".json") + kind + "-" + now.Format("20060102-150405") + ".json"
}

// checkEngineFlag refuses an --engine value no engine has as the usage
// error it is, before a plan is read or a file made.
func checkEngineFlag(choice string) error {
	if err := run.CheckEngineName(choice); err != nil {
		return Fail(ExitUsage, fmt.Errorf("--%w", err))
	}
	return nil
}
