package session

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/run"
)

// runWorkers runs the plan as r.Split.Workers local segment processes of
// this binary, merges their results and judges the whole.
func (pr Process) runWorkers(r RunRequest) error {
	p, err := pr.workersPlan(r)
	if err != nil {
		return err
	}
	if r.Out == "" {
		r.Out = defaultOut(p, time.Now())
	}
	oo, err := r.Outputs.open(pr)
	if err != nil {
		return err
	}
	oo.planStages(p.Load)
	// Set once the workers are known; the second Ctrl-C during the
	// coordinator's teardown merges before the process quits.
	mergeFailures := func() {}
	s, err := Open(pr.options(Options{Out: r.Out, Need: resultNeed(p, len(run.PlanMonitors(p))+len(r.Monitors)), Sinks: oo.sinks, TestID: oo.testID,
		OnQuit: func() { mergeFailures() }}))
	if err != nil {
		closeSinks(oo.sinks)
		return err
	}
	defer s.Close()
	e, err := pr.workers(p, r)
	if err != nil {
		return err
	}
	if keep := r.Failures.Keep; keep > 0 {
		if mergeFailures, err = pr.coordinatorFailures(e, r.Out, keep); err != nil {
			return err
		}
	}
	oc := s.Run(e)
	mergeFailures()
	return pr.printMerged(oc, e.Segments, r.Out)
}

// workersPlan loads and checks the plan of run --workers, refusing what
// the workers cannot run.
func (pr Process) workersPlan(r RunRequest) (*plan.Plan, error) {
	d := r.Split
	if d.Segment != "" {
		return nil, Fail(ExitUsage, errors.New("--workers runs every segment itself: leave out --segment"))
	}
	if d.Emit {
		return nil, Fail(ExitUsage, errors.New("--emit-result is for a single segment (a pod): leave out --workers"))
	}
	p, err := d.load(pr, r.PlanFile, r.AllowFiles)
	if err != nil {
		return nil, err
	}
	if err := CheckFit(pr.Stderr, p, d.Workers); err != nil {
		return nil, err
	}
	if p.Target == "demo" || r.Demo != "" {
		return nil, Fail(ExitUsage, errors.New("--workers needs a real target: start one with 'stampede demo --addr 127.0.0.1:8080' and set target: http://127.0.0.1:8080 (each worker would otherwise start its own demo)"))
	}
	// A bad --monitor is one usage error here, not N failed workers.
	if _, err := pr.monitorSpecs(p, r.Monitors); err != nil {
		return nil, err
	}
	return p, nil
}

// workers is the executor of run --workers: the worker processes, and
// the setup and teardown run here, once for the test.
func (pr Process) workers(p *plan.Plan, r RunRequest) (*Workers, error) {
	if err := besideResult(r.Out, "--workers"); err != nil {
		return nil, err
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, Fail(ExitRun, fmt.Errorf("cannot find the stampede executable to start workers: %v", err))
	}
	l := dist.Local{Bin: bin, Plan: r.PlanFile, Workers: r.Split.Workers, Environ: pr.environ(),
		Dir: strings.TrimSuffix(r.Out, filepath.Ext(r.Out)) + ".segments", Args: r.WorkerArgs}
	l.StartAt = time.Now().Add(dist.DefaultLead)
	if r.Split.StartAt != "" {
		if l.StartAt, err = parseStartAt(r.Split.StartAt); err != nil {
			return nil, err
		}
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
		return nil, err
	}
	stderr := pr.Stderr
	e := &Workers{Plan: p, Local: l, Summary: stderr, Run: &run.Options{Version: pr.Version, TLS: tlsConf, MaxProcs: pr.maxProcs()}}
	if !r.Quiet {
		// Said once the coordinator's setup is done: its start time is the
		// one the workers are given.
		e.Starting = func(l dist.Local) {
			fmt.Fprintf(stderr, "%d workers start at %s; logs and segment results in %s\n",
				l.Workers, l.StartAt.Format("15:04:05.000"), l.Dir)
		}
	}
	if r.Split.StartAt == "" {
		e.StartAfterSetup = dist.DefaultLead
	}
	e.Warn = func(msg string) { fmt.Fprintf(stderr, "stampede: warning: %s\n", msg) }
	return e, nil
}

// coordinatorFailures samples the coordinator's own setup and teardown
// too, into a file of its own beside the workers', merged with theirs;
// the function returned merges them.
func (pr Process) coordinatorFailures(e *Workers, out string, keep int) (func(), error) {
	l := e.Local
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return nil, Fail(ExitUsage, fmt.Errorf("--keep-failures: %v", err))
	}
	own, err := metrics.OpenFailureLog(filepath.Join(l.Dir, "coordinator.failures.jsonl"), keep)
	if err != nil {
		return nil, Fail(ExitUsage, fmt.Errorf("--keep-failures: %v", err))
	}
	e.Run.Errors.Failures = own
	return workerFailures(pr.Stderr, l, out, keep, own), nil
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
			files := failureFiles(l, own.Path(), begun)
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

// failureFiles are the failure samples of this test: the coordinator's
// (which exists only when its setup or teardown failed: OpenFailureLog
// removed any older one) and each worker's written since begun.
func failureFiles(l dist.Local, own string, begun time.Time) []string {
	files := []string{own}
	for i := range l.Workers {
		f := metrics.FailuresPath(filepath.Join(l.Dir, fmt.Sprintf("seg-%d.json", i)))
		// A file older than this test is a previous run's: the workers
		// remove them as they start, unless none started.
		if st, err := os.Stat(f); err == nil && !st.ModTime().Before(begun) {
			files = append(files, f)
		}
	}
	return files
}

// printMerged prints the merged result of --workers or k8s --apply and
// returns the exit of the session that judged and saved it.
func (pr Process) printMerged(oc *Outcome, segments int, out string) error {
	if oc.Result == nil {
		return oc.Err()
	}
	if err := report.Text(pr.Stdout, oc.Result); err != nil {
		return Fail(ExitRun, err)
	}
	if oc.SaveErr == nil {
		fmt.Fprintf(pr.Stderr, "merged result of %d segments saved to %s\n", segments, out)
	}
	return oc.Err()
}
