package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// LevelSplit is how gates, sweep and capacity split each level over
// processes: Workers runs every level as that many segment processes,
// merged and judged here (LevelWorkers); Segment and StartAt (sweep) are
// what such a process runs: one level's share.
type LevelSplit struct {
	Workers int
	Segment string
	StartAt string
	// Args are the global flags given (--allow-files), passed on to each
	// segment process as `run --workers` passes them on to its workers.
	Args []string
	// StartGrace is how late after StartAt a segment may still start
	// (a pod's: default run.DefaultStartGrace).
	StartGrace time.Duration
	// Emit prints the segment's result between markers on stdout, for a
	// pod's log (as `run --emit-result`).
	Emit bool
	// K8s, when set, runs each level as the pods of one Kubernetes
	// Indexed Job (`stampede k8s gates|sweep`, k8scmd_levels.go).
	K8s *K8sRequest
	// k8sCluster, when set, is the cluster a test gives (a fake
	// clientset); else the kubeconfig's.
	k8sCluster *dist.Cluster
}

// check refuses what the workers cannot run as one test
// (levels.SplitRefusal).
func (l LevelSplit) check(p *plan.Plan) error {
	switch {
	case l.Workers < 0:
		return Fail(ExitUsage, fmt.Errorf("--workers %d: expected a number of processes, 2 or more", l.Workers))
	case l.Workers <= 1:
		return nil
	case l.Segment != "":
		return Fail(ExitUsage, errors.New("--workers and --segment: give one"))
	}
	if why := levels.SplitRefusal(p); why != "" {
		return Fail(ExitUsage, errors.New(why))
	}
	return nil
}

// processes is how many processes share each level.
func (l LevelSplit) processes() int {
	if l.K8s != nil {
		return max(l.K8s.Segments, 1)
	}
	if l.Workers > 1 {
		return l.Workers
	}
	if s, err := segment.Parse(l.Segment); err == nil && l.Segment != "" {
		return s.Norm().Count
	}
	return 1
}

// apply makes this process run its segment of each level, from the start
// time the coordinator gave.
func (l LevelSplit) apply(o *run.Options) error {
	if l.Segment == "" {
		return nil
	}
	s, err := segment.Parse(l.Segment)
	if err != nil {
		return Fail(ExitUsage, fmt.Errorf("--segment: %v", err))
	}
	o.Segment = s
	o.StartGrace = l.StartGrace
	if l.StartAt != "" {
		t, err := time.Parse(time.RFC3339Nano, l.StartAt)
		if err != nil {
			return Fail(ExitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time", l.StartAt))
		}
		o.StartAt = t
	}
	return nil
}

type levelRunner = func(ctx context.Context, vary string, v float64, i, n int, o levels.Options) (result.Level, error)

// runner is the levels' Runner for --workers, nil without it. The
// segments' files go to OUT.segments beside the result.
func (pr Process) levelRunner(l LevelSplit, p *plan.Plan, planFile, out string) (levelRunner, error) {
	if l.K8s != nil {
		return pr.k8sLevelRunner(l, p, planFile)
	}
	if l.Workers <= 1 {
		return nil, nil
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, Fail(ExitRun, fmt.Errorf("the workers run this executable: %v", err))
	}
	dir := out + ".segments"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Fail(ExitUsage, err)
	}
	w := LevelWorkers{Plan: p, Stderr: pr.Stderr,
		Segments: LocalSegments{Bin: bin, PlanFile: planFile, Workers: l.Workers, Dir: dir, Args: l.Args}}
	return w.Runner, nil
}
