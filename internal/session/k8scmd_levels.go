package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// `stampede k8s gates|sweep`: each level of the plan runs as one
// Kubernetes Indexed Job, whose pod i runs the level's segment i/N
// (`stampede sweep PLAN --VARY V --segment i/N --start-at T`, as a local
// --workers process does) and prints its level result to its log. The
// levels go in order: a level's Job is created once the one before it
// was collected, merged exactly and judged (LevelWorkers, the coordinator
// of --workers too).

// checkK8sLevels refuses, before anything is created, what a levels run
// on Kubernetes cannot do.
func (f K8sRequest) checkK8sLevels(p *plan.Plan, levelCount int) error {
	switch {
	case f.Segments < 1:
		return Fail(ExitUsage, errors.New("--segments N is required (N ≥ 1): the number of pods of each level"))
	case f.StartGrace <= 0:
		return Fail(ExitUsage, fmt.Errorf("--start-grace %v: expected a duration above zero, such as 30s (how late after a level's start a pod may still run)", f.StartGrace))
	case f.StartIn <= 0:
		return Fail(ExitUsage, fmt.Errorf("--start-in %v: expected a duration above zero: time for each level's pods to be scheduled and start", f.StartIn))
	}
	if why := levels.SplitRefusal(p); why != "" {
		return Fail(ExitUsage, errors.New(strings.Replace(why, "--workers", "levels on Kubernetes", 1)))
	}
	if claim, _, _ := strings.Cut(f.DataPVC, ":"); f.DataPVC != "" && claim == "" {
		return Fail(ExitUsage, fmt.Errorf("--data-pvc %q: expected CLAIM or CLAIM:SUBPATH", f.DataPVC))
	}
	if m := dist.MaxName(f.Segments) - len(levelSuffix(levelCount-1)); f.Name != "" && len(f.Name) > m {
		return Fail(ExitUsage, fmt.Errorf("--name %q is %d characters; each level's Job is NAME%s … NAME%s and its pods add -<index>, each a DNS-1123 label of at most 63 characters, so the name may have at most %d",
			f.Name, len(f.Name), levelSuffix(0), levelSuffix(levelCount-1), m))
	}
	return nil
}

// levelSuffix ends the name of level i's Job: -l1, -l2, …
func levelSuffix(i int) string { return "-l" + strconv.Itoa(i+1) }

// k8sLevelRunner is the levels' Runner for `stampede k8s gates|sweep`.
func (pr Process) k8sLevelRunner(l LevelSplit, p *plan.Plan, planFile string) (levelRunner, error) {
	f := *l.K8s
	var c dist.Cluster
	if l.k8sCluster != nil {
		c = *l.k8sCluster
	} else {
		cs, err := k8sClient(f.Kubeconfig)
		if err != nil {
			return nil, err
		}
		c.Client = cs
	}
	c.Namespace = f.Namespace
	stderr := pr.Stderr
	if c.Progress == nil {
		c.Progress = func(s string) { fmt.Fprintln(stderr, s) }
	}
	base := f.Name
	if base == "" {
		base = dist.JobName(p.Name)
	}
	ks := K8sSegments{Request: f, PlanFile: planFile, Plan: p, Cluster: c, Base: base, Stderr: stderr}
	return LevelWorkers{Plan: p, Stderr: stderr, Segments: ks, IDs: &result.IDsReached{}}.Runner, nil
}

// K8sSegments runs each level's segments as the pods of one Indexed Job.
type K8sSegments struct {
	Request  K8sRequest // the cluster flags: segments, image, namespace, …
	PlanFile string
	Plan     *plan.Plan
	// Cluster is the API server's client and how to wait; StartBy and
	// Ran are set per level.
	Cluster dist.Cluster
	// Base names the Jobs: BASE-l1, BASE-l2, …
	Base   string
	Stderr io.Writer
}

func (k K8sSegments) Count() int          { return k.Request.Segments }
func (k K8sSegments) Lead() time.Duration { return k.Request.StartIn }
func (k K8sSegments) Where() string       { return fmt.Sprintf("%d pods", k.Request.Segments) }

// jobName is level i's Job's name.
func (k K8sSegments) jobName(i int) string {
	suffix := levelSuffix(i)
	base := k.Base
	if m := dist.MaxName(k.Request.Segments) - len(suffix); len(base) > m {
		base = strings.TrimRight(base[:m], "-")
	}
	return base + suffix
}

// manifest is level l's Job, its pods starting at start.
func (k K8sSegments) manifest(l LevelCall, start time.Time) (*dist.Manifest, error) {
	f, o := k.Request, l.Options
	claim, subPath, _ := strings.Cut(f.DataPVC, ":")
	overrun := o.Overrun
	if overrun <= 0 {
		overrun = max(o.Ramp, levels.MinOverrun)
	}
	return dist.BuildManifest(k.Plan, dist.K8s{Name: k.jobName(l.Index), Namespace: f.Namespace, Image: f.Image,
		Segments: f.Segments, StartAt: start, StartGrace: f.StartGrace, PlanFile: k.PlanFile,
		CPU: f.CPU, Memory: f.Mem, EnvFromSecret: f.Secret, PullPolicy: f.Pull,
		DataPVC: claim, DataSubPath: subPath,
		Level: &dist.LevelRun{Vary: l.Vary, Value: l.Value, Ramp: o.Ramp, Hold: o.Hold, Lasts: o.Ramp + overrun + o.Hold,
			IDsAfter: l.IDsAfter, Seed: levelsSeed(k.Plan)}})
}

// Run creates level l's Job, waits for it and collects its pods' level
// results. A signal (Ctrl-C) stops the wait: what finished is collected
// and the Job is deleted, so no pod sends load for a level that will not
// be whole; so is a Job whose segments missed their start, or that the
// wait gave up on.
func (k K8sSegments) Run(ctx context.Context, l LevelCall, start time.Time) ([]SegmentResult, os.Signal) {
	m, err := k.manifest(l, start)
	if err != nil {
		return k.none(fmt.Errorf("the level's job: %v", err)), nil
	}
	forward := l.Options.Forward
	if forward == nil {
		forward = func(bool) {}
	}
	forward(true)
	defer forward(false)
	wctx, cancel := context.WithDeadline(ctx, k8sWaitDeadline(time.Now(), m))
	defer cancel()
	sigs := watchStop(l.Options.Signals, func(os.Signal) { cancel() })
	defer sigs.stop()
	c := k.Cluster
	c.StartBy, c.Ran = start.Add(k.Request.StartGrace), &dist.RanPods{}
	if err := c.Apply(wctx, m); err != nil {
		return k.none(fmt.Errorf("job %s not created: %v", m.Job.Name, err)), sigs.heard()
	}
	fmt.Fprintf(k.Stderr, "created job and configmap %s/%s (%s %s); segments start at %s\n", k.Request.Namespace, m.Job.Name,
		l.Vary, levels.FormatLevel(l.Vary, l.Value), start.UTC().Format(time.RFC3339))
	job, werr := c.Wait(wctx, m.Job.Name)
	if sig := sigs.heard(); sig != nil {
		fmt.Fprintf(k.Stderr, "%s: stopping: job %s is deleted once what its segments finished is read\n", run.SignalName(sig), m.Job.Name)
	}
	outs := k.collect(ctx, c, m, job, werr)
	dist.SummaryOfOutcomes(k.Stderr, outs)
	segs := make([]SegmentResult, len(outs))
	for i, o := range outs {
		segs[i] = SegmentResult{Name: o.Name(), Result: o.Result, Err: o.Err}
	}
	return segs, sigs.heard()
}

// collect reads each pod's level result. A Job that did not finish (a
// missed start, Ctrl-C, the wait's deadline) is deleted after: its
// finished segments are read first, since the deletion takes their logs.
func (k K8sSegments) collect(ctx context.Context, c dist.Cluster, m *dist.Manifest, job *batchv1.Job, werr error) []dist.Outcome {
	n, name := k.Request.Segments, m.Job.Name
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if job == nil {
		job = m.Job // Collect needs only its name
	}
	var missed *dist.MissedStartError
	switch {
	case errors.As(werr, &missed):
		fmt.Fprintln(k.Stderr, werr)
	case werr != nil && !errors.Is(werr, context.Canceled):
		fmt.Fprintf(k.Stderr, "%v; collecting the segments that finished\n", werr)
	}
	if _, failed, why := dist.JobDone(job); failed {
		fmt.Fprintf(k.Stderr, "job %s failed: %s\n", name, why)
	}
	outs, err := c.Collect(dctx, job, n)
	if err != nil {
		outs = k.noneOutcomes(err)
	}
	if werr != nil {
		k.deleteJob(dctx, c, name)
	}
	if missed != nil {
		for _, st := range missed.Missing {
			if st.Index < len(outs) && outs[st.Index].Result == nil {
				outs[st.Index].Err = fmt.Errorf("missed its start (%s): %s", missed.StartBy.UTC().Format(time.RFC3339), st.Why)
			}
		}
	}
	return outs
}

// deleteJob stops a level's Job that did not finish: its pods would go on
// sending load for a level that is over.
func (k K8sSegments) deleteJob(ctx context.Context, c dist.Cluster, name string) {
	if err := c.Delete(ctx, name); err != nil {
		fmt.Fprintf(k.Stderr, "job %s could not be deleted (%v), so its running segments keep sending load: kubectl delete job %s -n %s\n",
			name, err, name, c.Namespace)
		return
	}
	fmt.Fprintf(k.Stderr, "job %s deleted (with its pods and configmap)\n", name)
}

func (k K8sSegments) noneOutcomes(err error) []dist.Outcome {
	outs := make([]dist.Outcome, k.Request.Segments)
	for i := range outs {
		outs[i].Segment.Index, outs[i].Segment.Count = i, k.Request.Segments
		outs[i].ExitCode, outs[i].Err = -1, err
	}
	return outs
}

func (k K8sSegments) none(err error) []SegmentResult {
	segs := make([]SegmentResult, k.Request.Segments)
	for i := range segs {
		segs[i] = SegmentResult{Name: fmt.Sprintf("segment %d", i), Err: err}
	}
	return segs
}

// stopWatch hears the signals that come while a level's Job runs.
type stopWatch struct {
	mu    sync.Mutex
	first os.Signal
	done  chan struct{}
	over  chan struct{}
}

// watchStop calls stop once, on the first signal in brings, until the
// watch is stopped.
func watchStop(in <-chan os.Signal, stop func(os.Signal)) *stopWatch {
	w := &stopWatch{done: make(chan struct{}), over: make(chan struct{})}
	go func() {
		defer close(w.over)
		for {
			select {
			case <-w.done:
				return
			case sig, ok := <-in:
				if !ok {
					in = nil
					continue
				}
				w.mu.Lock()
				first := w.first == nil
				if first {
					w.first = sig
				}
				w.mu.Unlock()
				if first {
					stop(sig)
				}
			}
		}
	}()
	return w
}

func (w *stopWatch) heard() os.Signal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

func (w *stopWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	<-w.over
}
