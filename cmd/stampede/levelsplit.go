package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
)

// levelSplit is how gates, sweep and capacity split each level over
// processes: --workers N runs every level as N segment processes, merged
// and judged here (session.LevelWorkers); --segment and --start-at (sweep)
// are what such a process runs: one level's share.
type levelSplit struct {
	workers int
	segment string
	startAt string
}

func (l *levelSplit) add(f *pflag.FlagSet, segmentFlags bool) {
	f.IntVar(&l.workers, "workers", 0, "run each level as N segment processes on this machine, merged exactly and judged once (past one process's limits, such as open files)")
	if segmentFlags {
		f.StringVar(&l.segment, "segment", "", "run only segment INDEX/COUNT of each level (what a --workers process runs)")
		f.StringVar(&l.startAt, "start-at", "", "start at this RFC 3339 instant (the segments of a level share it)")
		f.MarkHidden("segment")
		f.MarkHidden("start-at")
	}
}

// check refuses what the workers cannot run as one test
// (levels.SplitRefusal).
func (l levelSplit) check(p *plan.Plan) error {
	switch {
	case l.workers < 0:
		return fail(exitUsage, fmt.Errorf("--workers %d: expected a number of processes, 2 or more", l.workers))
	case l.workers <= 1:
		return nil
	case l.segment != "":
		return fail(exitUsage, errors.New("--workers and --segment: give one"))
	}
	if why := levels.SplitRefusal(p); why != "" {
		return fail(exitUsage, errors.New(why))
	}
	return nil
}

// processes is how many processes share each level.
func (l levelSplit) processes() int {
	if l.workers > 1 {
		return l.workers
	}
	if s, err := segment.Parse(l.segment); err == nil && l.segment != "" {
		return s.Norm().Count
	}
	return 1
}

// apply makes this process run its segment of each level, from the start
// time the coordinator gave.
func (l levelSplit) apply(o *run.Options, stderr io.Writer) error {
	if l.segment == "" {
		return nil
	}
	s, err := segment.Parse(l.segment)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("--segment: %v", err))
	}
	o.Segment = s
	if l.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, l.startAt)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("--start-at %q: expected an RFC 3339 time", l.startAt))
		}
		o.StartAt = t
	}
	return nil
}

// runner is the levels' Runner for --workers, nil without it. The
// segments' files go to OUT.segments beside the result. cmd's global
// flags are passed on to the segments (levelWorkerFlags).
func (l levelSplit) runner(cmd *cobra.Command, p *plan.Plan, planFile, out string) (levelRunner, error) {
	if l.workers <= 1 {
		return nil, nil
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fail(exitRun, fmt.Errorf("the workers run this executable: %v", err))
	}
	dir := out + ".segments"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fail(exitUsage, err)
	}
	w := session.LevelWorkers{Bin: bin, PlanFile: planFile, Plan: p, Workers: l.workers, Dir: dir,
		Stderr: cmd.ErrOrStderr(), Args: levelWorkerFlags(cmd)}
	return w.Runner, nil
}

// levelWorkerFlags are the global flags given (--allow-files), as `run
// --workers` passes them on to its workers (workerFlags): a segment runs
// 'sweep', whose own flags the coordinator sets, but it loads the same
// plan and must read its files from the same places.
func levelWorkerFlags(cmd *cobra.Command) []string {
	global := cmd.InheritedFlags()
	var args []string
	for _, a := range workerFlags(cmd.Flags()) {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if global.Lookup(name) != nil {
			args = append(args, a)
		}
	}
	return args
}

type levelRunner = func(ctx context.Context, vary string, v float64, i, n int, o levels.Options) (result.Level, error)
