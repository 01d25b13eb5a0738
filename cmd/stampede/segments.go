package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// distFlags are the run flags of distributed runs: one segment of a test
// (--segment, --start-at; what a Kubernetes pod runs), or N local segment
// processes merged into one result (--workers).
type distFlags struct {
	segment    string
	startAt    string
	startGrace time.Duration
	workers    int
	emit       bool
	dataDir    string
}

func (d *distFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&d.segment, "segment", "", "run only segment INDEX/COUNT of the test (index from 0), e.g. 0/4; merge the segments' results with 'stampede merge'")
	fs.StringVar(&d.startAt, "start-at", "", "start at this RFC 3339 instant (all segments of a run share it); a segment that comes up later than --start-grace after it does not run")
	fs.DurationVar(&d.startGrace, "start-grace", run.DefaultStartGrace, "how late after --start-at a segment may still start")
	fs.IntVar(&d.workers, "workers", 0, "run the test as N segment processes on this machine, then merge them and judge the whole (past one process's limits, such as open files)")
	fs.StringVar(&d.dataDir, "data-dir", "", "read the plan's data files (relative paths) from this directory instead of the plan's (a volume mounted in a pod)")
	fs.BoolVar(&d.emit, "emit-result", false, "also print the result file (gzip, base64) between marker lines on stdout, for collection from pod logs")
}

// seg is the segment to run; the whole test without --segment.
func (d *distFlags) seg() (segment.Segment, error) {
	if d.segment == "" {
		return segment.Whole, nil
	}
	s, err := segment.Parse(d.segment)
	if err != nil {
		return s, fail(exitUsage, fmt.Errorf("--segment: %v", err))
	}
	return s, nil
}

// apply puts the segment and start time into the run options.
func (d *distFlags) apply(o *run.Options, stderr io.Writer, p *plan.Plan) error {
	s, err := d.seg()
	if err != nil {
		return err
	}
	o.Segment = s
	o.StartGrace = d.startGrace
	if d.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, d.startAt)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time such as 2026-05-01T12:00:00Z", d.startAt))
		}
		o.StartAt = t
	}
	if !s.IsWhole() {
		fmt.Fprintln(stderr, segment.Of(p, s))
	}
	if !o.StartAt.IsZero() {
		if wait := time.Until(o.StartAt); wait > 0 {
			fmt.Fprintf(stderr, "waiting %v for the start time %s\n", wait.Round(time.Millisecond), o.StartAt.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// judges reports whether this run's thresholds decide its exit code: not
// for a segment, whose share says nothing about the whole (thresholds are
// judged once, on the merged result).
func (d *distFlags) judges() bool {
	s, err := d.seg()
	return err != nil || s.IsWhole()
}

// unjudge removes a segment's thresholds, so neither its summary nor its
// file suggests a verdict that only the merged whole can give.
func (d *distFlags) unjudge(res *result.Result, stderr io.Writer) {
	if d.judges() || len(res.Thresholds) == 0 {
		return
	}
	res.Thresholds = []result.Threshold{}
	fmt.Fprintln(stderr, "thresholds are judged on the merged result of all segments, not on one segment")
}

func (d *distFlags) emitResult(stdout io.Writer, res *result.Result) error {
	if !d.emit {
		return nil
	}
	return dist.Emit(stdout, res)
}

// notForWorkers are the run flags --workers handles itself; every other
// flag given is passed on to each worker as it was given, so a flag added
// to 'run' later reaches the workers without a change here.
var notForWorkers = map[string]string{
	"out":         "each worker writes its segment's result in the .segments directory",
	"quiet":       "workers always run quiet; their output goes to their logs",
	"demo":        "refused with --workers",
	"segment":     "each worker gets its own",
	"start-at":    "passed as the instant every worker starts at",
	"workers":     "the workers are segments, not more workers",
	"emit-result": "refused with --workers",
	"cpuprofile":  "one profile file cannot take N processes",
}

// workerFlags is the command line given to 'run' that the workers need too
// (--monitor, --start-grace, ...), as --name=value for each value given.
func workerFlags(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		if _, own := notForWorkers[f.Name]; own {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

// runWorkers runs the plan as d.workers local segment processes of this
// binary, merges their results and judges the whole. fs is the run
// command's flags, passed on to the workers (workerFlags).
func runWorkers(stdout, stderr io.Writer, planPath, out, demoOpts string, quiet bool, d distFlags, fs *pflag.FlagSet, monitors []string) error {
	if d.segment != "" {
		return fail(exitUsage, errors.New("--workers runs every segment itself: leave out --segment"))
	}
	if d.emit {
		return fail(exitUsage, errors.New("--emit-result is for a single segment (a pod): leave out --workers"))
	}
	p, err := d.loadPlan(planPath)
	if err != nil {
		return err
	}
	if err := checkFit(p, d.workers); err != nil {
		return err
	}
	if p.Target == "demo" || demoOpts != "" {
		return fail(exitUsage, errors.New("--workers needs a real target: start one with 'stampede demo --addr 127.0.0.1:8080' and set target: http://127.0.0.1:8080 (each worker would otherwise start its own demo)"))
	}
	if out == "" {
		out = defaultOut(p, time.Now())
	}
	// A bad --monitor is one usage error here, not N failed workers.
	if _, err := monitorSpecs(p, monitors); err != nil {
		return err
	}
	if err := checkWritable(out); err != nil {
		return fail(exitUsage, err)
	}
	output, err := openOutput(out, resultNeed(p, len(run.PlanMonitors(p))+len(monitors)))
	if err != nil {
		return err
	}
	defer output.Close()
	bin, err := os.Executable()
	if err != nil {
		return fail(exitRun, fmt.Errorf("cannot find the stampede executable to start workers: %v", err))
	}
	l := dist.Local{Bin: bin, Plan: planPath, Workers: d.workers,
		Dir: strings.TrimSuffix(out, filepath.Ext(out)) + ".segments", Args: workerFlags(fs)}
	if d.startAt != "" {
		if l.StartAt, err = time.Parse(time.RFC3339Nano, d.startAt); err != nil {
			return fail(exitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time such as 2026-05-01T12:00:00Z", d.startAt))
		}
	} else {
		l.StartAt = time.Now().Add(dist.DefaultLead)
	}
	if !quiet {
		fmt.Fprintf(stderr, "%d workers start at %s; logs and segment results in %s\n",
			d.workers, l.StartAt.Format("15:04:05.000"), l.Dir)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	outs, err := l.Run(context.Background(), sigs)
	if err != nil {
		return fail(exitRun, err)
	}
	save := func(m *result.Result) error {
		if err := output.Final(m); err != nil {
			return lostResult(output, err)
		}
		return nil
	}
	return mergeAndSave(stdout, stderr, outs, func(m *result.Result) { finish(m, p) }, save, out)
}

// mergeAndJudge merges the segments' results, judges the plan's thresholds
// on the whole, saves and prints it: the end of --workers and of k8s --apply.
func mergeAndJudge(stdout, stderr io.Writer, outs []dist.Outcome, judge func(*result.Result), out string) error {
	save := func(m *result.Result) error {
		if err := result.Write(out, m); err != nil {
			return fmt.Errorf("the merged result could not be saved to %s: %v", out, err)
		}
		return nil
	}
	return mergeAndSave(stdout, stderr, outs, judge, save, out)
}

// mergeAndSave is mergeAndJudge with the write given.
func mergeAndSave(stdout, stderr io.Writer, outs []dist.Outcome, judge func(*result.Result), save func(*result.Result) error, out string) error {
	dist.SummaryOfOutcomes(stderr, outs)
	m, err := dist.Merge(outs)
	if err != nil {
		return fail(exitRun, err)
	}
	judge(m)
	if err := save(m); err != nil {
		return fail(exitRun, err)
	}
	if err := report.Text(stdout, m); err != nil {
		return fail(exitRun, err)
	}
	fmt.Fprintf(stderr, "merged result of %d segments saved to %s\n", len(outs), out)
	switch {
	case m.Run.Partial:
		return fail(exitRun, fmt.Errorf("the merged result is partial: %s", m.Run.PartialReason))
	case !gate.AllPass(m.Thresholds):
		return fail(exitThreshold, nil)
	}
	return nil
}
