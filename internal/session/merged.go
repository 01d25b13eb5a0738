package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// Workers runs the test as local segment processes of this binary
// (dist.Local) and merges their results. Ctrl-C goes to the workers, each
// of which stops and writes its partial; the merge of those is the
// partial whole.
type Workers struct {
	Plan  *plan.Plan
	Local dist.Local
	// Summary hears one line per segment (default: nowhere).
	Summary io.Writer
	// Segments is how many segments were merged, once Execute returned.
	Segments int
	// Run, when set, is what this process runs the plan's setup and
	// teardown with: once for the test, before and after the workers,
	// which are handed the setup's captures (run.Lifecycle.HandOff).
	// Without it every worker runs its own.
	Run *run.Options
	// StartAfterSetup, when set, moves the workers' start to this long
	// after the setup ends, so a slow setup does not make them late.
	StartAfterSetup time.Duration

	// Starting, when set, hears the workers' start just before they are
	// started: after the coordinator's setup, with the real start time.
	Starting func(dist.Local)
	// Warn, when set, hears what the user should know at once: a setup
	// that overran the given start time.
	Warn func(msg string)
	// CheckpointEvery is how often the merge of the workers' checkpoints
	// replaces the result file while they run (default 5s, as run's).
	CheckpointEvery time.Duration

	live    workersLive // the checkpoints Snapshot read (workers_live.go)
	phaseOf             // the coordinator's setup and teardown

	// mu guards load, and its workflow, which Execute completes with the
	// teardown while a snapshot may be copying it.
	mu   sync.Mutex
	load *result.Result // the merged load, once the workers are done
	// tornDown: the coordinator's teardown is over and in load.
	tornDown bool
}

func (e *Workers) ForwardsSignals() bool { return true }

func (e *Workers) Execute(ctx context.Context, c Control) (*result.Result, error) {
	forward := c.Forward
	if forward == nil {
		forward = func(bool) {}
	}
	// started: the workers were started, so a teardown follows a load;
	// before, it cleans up after a setup with no load sent.
	var started atomic.Bool
	ro := e.runOptions(&started)
	l, lc, setup, done, err := e.setup(ctx, ro)
	if err != nil {
		return nil, err
	}
	defer done()
	if ctx.Err() != nil {
		// Ctrl-C came before the workers could hear it: none is started.
		if lc != nil {
			lc.Teardown(e.Plan, ro)
		}
		if setup != nil {
			return nil, fmt.Errorf("%w as it ended; no worker was started, no load was sent", run.ErrSetupCut)
		}
		return nil, fmt.Errorf("interrupted (%s) before the workers started; nothing was sent", run.InterruptName(ctx))
	}
	if e.Starting != nil {
		e.Starting(l)
	}
	started.Store(true)
	forward(true)
	stopCheckpoints := e.checkpoints(c.Checkpoint)
	outs, err := l.Run(ctx, c.Signals)
	stopCheckpoints()
	forward(false)
	var res *result.Result
	if err == nil {
		e.Segments = len(outs)
		res, err = merged(e.Summary, outs)
	}
	if lc != nil {
		e.tearDown(res, lc, setup, ro, c.Checkpoint)
	}
	return res, err
}

// runOptions are what the coordinator runs the setup and teardown with;
// a teardown before the workers started is a cleanup.
func (e *Workers) runOptions(started *atomic.Bool) run.Options {
	if e.Run == nil {
		return run.Options{}
	}
	ro := *e.Run
	ro.OnPhase = func(p run.Phase) {
		if p == run.PhaseTeardown && !started.Load() {
			p = run.PhaseCleanup
		}
		e.set(p)
	}
	return ro
}

// setup runs the plan's setup here, once for the test, and hands its
// captures to the workers through their environment; done removes what
// the hand-off left. Without a setup or teardown (or Run) the workers
// run their own and l is e.Local.
func (e *Workers) setup(ctx context.Context, ro run.Options) (l dist.Local, lc *run.Lifecycle, setup *result.Phase, done func(), err error) {
	l, done = e.Local, func() {}
	if e.Run == nil || (e.Plan.Setup == nil && e.Plan.Teardown == nil) {
		return l, nil, nil, done, nil
	}
	// Ctrl-C during the setup is the session's: it cancels ctx, which
	// cuts the setup off, and no worker is started.
	if lc, setup, err = run.Setup(ctx, e.Plan, ro); err != nil {
		return l, nil, nil, done, err
	}
	env, done, err := lc.HandOff(e.Plan, l.Dir)
	if err != nil {
		lc.Teardown(e.Plan, ro)
		return l, nil, nil, func() {}, fmt.Errorf("handing the setup's captures to the workers: %w", err)
	}
	l.Env = append(append([]string(nil), l.Env...), env...)
	if e.StartAfterSetup > 0 {
		l.StartAt = time.Now().Add(e.StartAfterSetup)
	} else if over := time.Since(l.StartAt); setup != nil && over > run.LateStartTolerance {
		if err := e.lateStart(l, over); err != nil {
			lc.Teardown(e.Plan, ro)
			done()
			return l, nil, nil, func() {}, err
		}
	}
	return l, lc, setup, done, nil
}

// lateStart: the start time was the user's (--start-at), shared with
// whatever else keys on it, so it is kept rather than moved: the workers
// join its schedule late (they judge their own lateness from the
// hand-off, not from the start time), and their results record how late
// (run.late_start_s). Past the end of the profile nothing is started.
func (e *Workers) lateStart(l dist.Local, over time.Duration) error {
	total := e.Plan.Load.Duration()
	if over >= total {
		return fmt.Errorf("the setup ended %v after the start time %s (--start-at), past the end of the %v profile: no worker was started, no load was sent; give a later --start-at",
			over.Round(time.Millisecond), l.StartAt.Format("15:04:05.000"), total)
	}
	if e.Warn != nil {
		e.Warn(fmt.Sprintf("the setup ended %v after the start time %s (--start-at): the workers start on its schedule at once, so the first %v of the %v profile is not sent",
			over.Round(time.Millisecond), l.StartAt.Format("15:04:05.000"), over.Round(time.Millisecond), total))
	}
	return nil
}

// tearDown runs the coordinator's teardown after the workers, also after
// Ctrl-C and when they failed (the setup's data is there either way), and
// records both phases in the merged result.
func (e *Workers) tearDown(res *result.Result, lc *run.Lifecycle, setup *result.Phase, ro run.Options, checkpoint func(*result.Result)) {
	if res != nil {
		if res.Workflow == nil {
			res.Workflow = &result.Workflow{}
		}
		res.Workflow.Setup = setup
		e.loadOver(res, checkpoint)
	}
	teardown := lc.Teardown(e.Plan, ro)
	// Under the lock: a snapshot taken now (a second Ctrl-C as the
	// teardown ends) copies this workflow, and keeps the load whole with
	// the teardown as it ended, rather than finding no load and reading
	// the workers' checkpoints back as a partial.
	e.mu.Lock()
	if res != nil {
		res.Workflow.Teardown = teardown
	}
	e.tornDown = true
	e.mu.Unlock()
}

// loadOver keeps the merged load for the time of the coordinator's
// teardown, as a plain run does (run.Run): a second Ctrl-C meanwhile
// saves it (Snapshot) with the teardown cut off, and a checkpoint puts it
// on disk before the teardown starts, so a coordinator killed during the
// teardown still leaves the whole load measured.
func (e *Workers) loadOver(res *result.Result, checkpoint func(*result.Result)) {
	if e.Plan.Teardown == nil {
		return
	}
	e.mu.Lock()
	e.load = res
	e.mu.Unlock()
	if checkpoint == nil {
		return
	}
	checkpoint(duringTeardown(res))
}

// duringTeardown is the checkpoint written as a teardown starts: res
// marked partial (unless it already is) with its teardown not finished,
// what a process killed during the teardown leaves.
func duringTeardown(res *result.Result) *result.Result {
	cp := withWorkflow(res)
	if !cp.Run.Partial {
		cp.Run.Partial = true
		cp.Run.PartialReason = "the load completed; the process ended during the teardown, before the final write"
	}
	cp.Workflow.Teardown = &result.Phase{Error: "not finished: the process ended during the teardown"}
	return cp
}

// withWorkflow is a copy of res whose workflow may be changed.
func withWorkflow(res *result.Result) *result.Result {
	cp := *res
	wf := result.Workflow{}
	if res.Workflow != nil {
		wf = *res.Workflow
	}
	cp.Workflow = &wf
	return &cp
}

// Judge evaluates the plan's thresholds on the merged whole.
func (e *Workers) Judge(res *result.Result) gate.Outcome {
	Evaluate(res, e.Plan)
	return gate.Outcome{Thresholds: res.Thresholds}
}

func merged(w io.Writer, outs []dist.Outcome) (*result.Result, error) {
	if w == nil {
		w = io.Discard
	}
	dist.SummaryOfOutcomes(w, outs)
	return dist.Merge(outs)
}

// Cluster waits for a Kubernetes Job of segments (already applied),
// collects each segment's result from its pod's log and merges them.
// Ctrl-C stops the waiting, not the Job.
type Cluster struct {
	Plan     *plan.Plan
	Cluster  dist.Cluster
	Manifest *dist.Manifest
	Segments int
	// Deadline, when set, ends the wait: past the Job's own deadline, so
	// the Job's DeadlineExceeded, with the controller's message, is what
	// ends a stuck run.
	Deadline time.Time
	// Stderr hears what the wait finds (default: nowhere).
	Stderr io.Writer
}

func (e *Cluster) Execute(ctx context.Context, _ Control) (*result.Result, error) {
	w := e.Stderr
	if w == nil {
		w = io.Discard
	}
	if !e.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.Deadline)
		defer cancel()
	}
	c, m := e.Cluster, e.Manifest
	job, err := c.Wait(ctx, m.Job.Name)
	var missed *dist.MissedStartError
	switch {
	case errors.As(err, &missed):
		// The segments that did start would send their share of a run that
		// can no longer be whole: stop them, and leave nothing behind.
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer dcancel()
		// Segments that finished sent their share: read it before the
		// deletion takes their logs.
		finished := c.Finished(dctx, job, e.Segments)
		if derr := c.Delete(dctx, m.Job.Name); derr != nil {
			return nil, fmt.Errorf("%v\nthe job could not be deleted (%v), so its running segments keep sending load: kubectl delete job %s -n %s",
				err, derr, m.Job.Name, c.Namespace)
		}
		err = fmt.Errorf("%v\njob %s deleted (with its pods and configmap): the segments that started stopped, since the run could not be whole", err, m.Job.Name)
		if finished == nil {
			return nil, err
		}
		if res, merr := merged(w, finished); merr == nil {
			return res, fmt.Errorf("%v; the segments that had finished are saved, merged, as a partial result", err)
		}
		return nil, err
	case err != nil && errors.Is(err, context.Canceled):
		return nil, err
	case err != nil:
		// The wait's deadline or the API server: still collect what the
		// segments that finished left in their logs.
		fmt.Fprintf(w, "%v; collecting the segments that finished\n", err)
		job = m.Job
	}
	if _, failed, why := dist.JobDone(job); failed {
		fmt.Fprintf(w, "job %s failed: %s\n", job.Name, why)
	}
	cctx := ctx
	if ctx.Err() != nil {
		var ccancel context.CancelFunc
		cctx, ccancel = context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer ccancel()
	}
	outs, err := c.Collect(cctx, job, e.Segments)
	if err != nil {
		return nil, err
	}
	return merged(w, outs)
}

// Judge evaluates the plan's thresholds on the merged whole.
func (e *Cluster) Judge(res *result.Result) gate.Outcome {
	Evaluate(res, e.Plan)
	return gate.Outcome{Thresholds: res.Thresholds}
}
