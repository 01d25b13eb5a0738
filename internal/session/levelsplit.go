package session

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/vu"
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
	// IDsAfter ("VU,ITER", a segment's) numbers the level's users after
	// the highest {{ vu }} and iteration the levels before it reached,
	// as one process's levels carry them on.
	IDsAfter string
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
// time the coordinator gave, its users numbered after the ids it gave.
func (l LevelSplit) apply(o *run.Options) error {
	if l.Segment == "" {
		return nil
	}
	if err := l.carryIDs(o); err != nil {
		return err
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
	if err := besideResult(out, "--workers"); err != nil {
		return nil, err
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, Fail(ExitRun, fmt.Errorf("the workers run this executable: %v", err))
	}
	dir := out + ".segments"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Fail(ExitUsage, err)
	}
	w := LevelWorkers{Plan: p, Stderr: pr.Stderr, IDs: &result.IDsReached{},
		Segments: LocalSegments{Bin: bin, PlanFile: planFile, Workers: l.Workers, Dir: dir, Args: l.Args, Seed: levelsSeed(p), Stderr: pr.Stderr}}
	return w.Runner, nil
}

// carryIDs gives a segment's levels a carry that numbers their users
// after --ids-after, and records what they reached in each level's
// result (reachedIDs) for the coordinator's next level.
func (l LevelSplit) carryIDs(o *run.Options) error {
	o.Carry = &vu.Carry{}
	if l.IDsAfter == "" {
		return nil
	}
	a, b, ok := strings.Cut(l.IDsAfter, ",")
	id, err1 := strconv.ParseInt(a, 10, 64)
	iter, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || id < 0 || iter < 0 {
		return Fail(ExitUsage, fmt.Errorf("--ids-after %q: expected VU,ITER, two whole numbers of 0 or more", l.IDsAfter))
	}
	o.Carry.StartAfter(id, iter)
	return nil
}

// reachedIDs records in a segment's level how far its users numbered.
func reachedIDs(carry *vu.Carry, lv result.Level) {
	if carry == nil || lv.Result == nil {
		return
	}
	id, iter := carry.Reached()
	lv.Result.Run.IDsReached = &result.IDsReached{VU: id, Iter: iter}
}

// idsAfter is the highest ids any segment of a level reached, for the
// next level's --ids-after; false when none recorded them.
func idsAfter(segs []SegmentResult) (result.IDsReached, bool) {
	var top result.IDsReached
	found := false
	for _, sg := range segs {
		r := sg.Result
		if r == nil || len(r.Levels) != 1 || r.Levels[0].Result == nil || r.Levels[0].Result.Run.IDsReached == nil {
			continue
		}
		ids := r.Levels[0].Result.Run.IDsReached
		top.VU, top.Iter, found = max(top.VU, ids.VU), max(top.Iter, ids.Iter), true
	}
	return top, found
}

// levelsSeed is the seed every segment of every level draws from: the
// plan's, or one drawn here for the whole test (as `run --workers` draws
// one for its workers), so the merged levels record it and a later
// level's users do not repeat an earlier level's draws.
func levelsSeed(p *plan.Plan) *uint64 {
	if p.Seed == nil {
		seed := rand.Uint64()
		p.Seed = &seed
	}
	return p.Seed
}
