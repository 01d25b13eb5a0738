package session

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	live workersLive // the checkpoints Snapshot read (workers_live.go)
}

func (e *Workers) ForwardsSignals() bool { return true }

func (e *Workers) Execute(ctx context.Context, c Control) (*result.Result, error) {
	l := e.Local
	var (
		lc    *run.Lifecycle
		setup *result.Phase
	)
	if e.Run != nil && (e.Plan.Setup != nil || e.Plan.Teardown != nil) {
		var err error
		if lc, setup, err = run.Setup(ctx, e.Plan, *e.Run); err != nil {
			return nil, err
		}
		env, done, err := lc.HandOff(e.Plan, l.Dir)
		if err != nil {
			return nil, fmt.Errorf("handing the setup's captures to the workers: %w", err)
		}
		defer done()
		l.Env = append(append([]string(nil), l.Env...), env...)
		if e.StartAfterSetup > 0 {
			l.StartAt = time.Now().Add(e.StartAfterSetup)
		}
	}
	outs, err := l.Run(ctx, c.Signals)
	var teardown *result.Phase
	if lc != nil {
		// Also after Ctrl-C, and when the workers failed: the setup's data
		// is there either way.
		teardown = lc.Teardown(e.Plan, *e.Run)
	}
	if err != nil {
		return nil, err
	}
	e.Segments = len(outs)
	res, err := merged(e.Summary, outs)
	if res != nil && lc != nil {
		if res.Workflow == nil {
			res.Workflow = &result.Workflow{}
		}
		res.Workflow.Setup, res.Workflow.Teardown = setup, teardown
	}
	return res, err
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
		if derr := c.Delete(dctx, m.Job.Name); derr != nil {
			return nil, fmt.Errorf("%v\nthe job could not be deleted (%v), so its running segments keep sending load: kubectl delete job %s -n %s",
				err, derr, m.Job.Name, c.Namespace)
		}
		return nil, fmt.Errorf("%v\njob %s deleted (with its pods and configmap): the segments that started stopped, since the run could not be whole", err, m.Job.Name)
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
