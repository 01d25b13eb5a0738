package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
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
	if !s.IsWhole() {
		// A worker of --workers: its coordinator ran the setup once for
		// the test and tears down after it.
		if o.Lifecycle, err = run.Received(p); err != nil {
			return fail(exitRun, err)
		}
		if err := receivedSeed(p); err != nil {
			return fail(exitRun, err)
		}
	}
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
	"output":      "streamed by the coordinator from the workers' merged checkpoints",
	"junit":       "written by the coordinator from the merged result",
	"dashboard":   "served by the coordinator from the workers' merged checkpoints",
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
	sinks, err := outputs.sinks(stderr)
	if err != nil {
		return err
	}
	outputs.planStages(p.Load)
	// Set once the workers are known; the second Ctrl-C during the
	// coordinator's teardown merges before the process quits.
	mergeFailures := func() {}
	s, err := session.Open(session.Options{Out: out, Need: resultNeed(p, len(run.PlanMonitors(p))+len(monitors)), Stderr: stderr, Sinks: sinks,
		OnQuit: func() { mergeFailures() }})
	if err != nil {
		closeSinks(sinks)
		return err
	}
	defer s.Close()
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
	if p.Seed == nil {
		// One draw for the test, not one per worker: the merged result
		// records it, and seed: N repeats the run.
		seed := rand.Uint64()
		p.Seed = &seed
	}
	l.Env = append(l.Env, fmt.Sprintf("%s=%d", seedEnv, *p.Seed))
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return fail(exitUsage, err)
	}
	// The setup and teardown run here, once for the test, not in each worker.
	e := &session.Workers{Plan: p, Local: l, Summary: stderr, Run: &run.Options{Version: version, TLS: tlsConf}}
	if !quiet {
		// Said once the coordinator's setup is done: its start time is the
		// one the workers are given.
		e.Starting = func(l dist.Local) {
			fmt.Fprintf(stderr, "%d workers start at %s; logs and segment results in %s\n",
				l.Workers, l.StartAt.Format("15:04:05.000"), l.Dir)
		}
	}
	if d.startAt == "" {
		e.StartAfterSetup = dist.DefaultLead
	}
	e.Warn = func(msg string) { fmt.Fprintf(stderr, "stampede: warning: %s\n", msg) }
	if keep, _ := fs.GetInt("keep-failures"); keep > 0 {
		// The coordinator's own setup and teardown are sampled too, into
		// a file of its own beside the workers', merged with theirs.
		if err := os.MkdirAll(l.Dir, 0o755); err != nil {
			return fail(exitUsage, fmt.Errorf("--keep-failures: %v", err))
		}
		own, err := metrics.OpenFailureLog(filepath.Join(l.Dir, "coordinator.failures.jsonl"), keep)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("--keep-failures: %v", err))
		}
		e.Run.Errors.Failures = own
		mergeFailures = workerFailures(stderr, l, out, keep, own)
	}
	oc := s.Run(e)
	mergeFailures()
	return printMerged(stdout, stderr, oc, e.Segments, out)
}

// workerFailures merges the failure samples each worker wrote
// (--keep-failures, passed on to them) into the one file a run of one
// process writes, RESULT.failures.jsonl, keeping up to keep per step for
// the whole test, and says where it is. Once only.
func workerFailures(stderr io.Writer, l dist.Local, out string, keep int, own *metrics.FailureLog) func() {
	var once sync.Once
	begun := time.Now()
	return func() {
		once.Do(func() {
			if err := own.Close(); err != nil {
				fmt.Fprintf(stderr, "stampede: the coordinator's failure samples in %s are incomplete: %v\n", own.Path(), err)
			}
			// The coordinator's file exists only when its setup or
			// teardown failed (OpenFailureLog removed any older one).
			files := []string{own.Path()}
			for i := range l.Workers {
				f := metrics.FailuresPath(filepath.Join(l.Dir, fmt.Sprintf("seg-%d.json", i)))
				// A file older than this test is a previous run's: the
				// workers remove them as they start, unless none started.
				if st, err := os.Stat(f); err == nil && !st.ModTime().Before(begun) {
					files = append(files, f)
				}
			}
			path := metrics.FailuresPath(out)
			n, err := dist.MergeFailures(path, files, keep)
			if err != nil {
				fmt.Fprintf(stderr, "stampede: the workers' failure samples could not be merged into %s: %v; each worker's are in %s\n", path, err, l.Dir)
				return
			}
			if n == 0 {
				return // no file: nothing failed, or nothing ran
			}
			fmt.Fprintf(stderr, "%d failure %s saved to %s (the earliest %d per step)\n", n, pluralWord(int(n), "sample"), path, keep)
		})
	}
}

// printMerged prints the merged result of --workers or k8s --apply and
// returns the exit of the session that judged and saved it.
func printMerged(stdout, stderr io.Writer, oc *session.Outcome, segments int, out string) error {
	if oc.Result == nil {
		return oc.Err()
	}
	if err := report.Text(stdout, oc.Result); err != nil {
		return fail(exitRun, err)
	}
	if oc.SaveErr == nil {
		fmt.Fprintf(stderr, "merged result of %d segments saved to %s\n", segments, out)
	}
	return oc.Err()
}

// seedEnv hands the coordinator's seed to its workers (--workers), so
// that every segment draws from the one seed the merged result records.
const seedEnv = "STAMPEDE_SEED"

// receivedSeed makes the coordinator's seed the plan's, for a worker whose
// plan gives none.
func receivedSeed(p *plan.Plan) error {
	text, ok := os.LookupEnv(seedEnv)
	if !ok || p.Seed != nil {
		return nil
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return fmt.Errorf("the coordinator's seed (%s=%q): %v", seedEnv, text, err)
	}
	p.Seed = &v
	return nil
}
