package session

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
)

// CheckFit refuses, before any load, a plan that one of processes
// processes cannot hold (plan.CheckFit): past the open-files limit the
// run would fail on connections it cannot open and on its own result
// file. When the default max_in_flight is lowered to fit, it says so on
// stderr: the run may then drop arrivals the plan never asked to drop.
func CheckFit(stderr io.Writer, p *plan.Plan, processes int) error {
	limit := openFilesLimit()
	if msg := p.LowerToFit(processes, limit); msg != "" {
		fmt.Fprintln(stderr, msg)
	}
	if err := p.CheckFit(processes, limit); err != nil {
		return Fail(ExitUsage, fmt.Errorf("invalid plan:\n%v", err))
	}
	return nil
}

// CheckLevelsFit checks every level of gates, sweep or capacity as one
// of processes processes holds its share: the plan's own stages say
// nothing of the levels, so without this a level past the open-files
// limit would only fail once the levels before it had run.
func CheckLevelsFit(stderr io.Writer, p *plan.Plan, vary string, values []float64, ramp, hold time.Duration, processes int) error {
	limit := openFilesLimit()
	// An open plan's rate and tenants levels keep its max_in_flight, so
	// lowering the default here is what those levels run with.
	if vary != plan.VaryUsers {
		if msg := p.LowerToFit(processes, limit); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
	}
	for _, v := range largestFirst(p, vary, values, ramp, hold) {
		lp, err := p.AtLevel(vary, v, ramp, hold)
		if err != nil {
			return Fail(ExitUsage, fmt.Errorf("level %s %s: %v", vary, levels.FormatLevel(vary, v), err))
		}
		if err := levelFits(p, lp, processes, limit); err != nil {
			return Fail(ExitUsage, fmt.Errorf("invalid plan at level %s %s:\n%v", vary, levels.FormatLevel(vary, v), err))
		}
	}
	return nil
}

// levelFits is the level plan lp's CheckFit, its problems placed where
// the levels are written.
func levelFits(p, lp *plan.Plan, processes int, limit uint64) error {
	err := lp.CheckFit(processes, limit)
	var perr *plan.Error
	if errors.As(err, &perr) {
		// A level's stages are made up, so their place in the file is
		// the gates' own (or the plan's, for a sweep's levels).
		at := plan.Pos{File: p.File}
		if p.Gates != nil {
			at = p.Gates.Pos
		}
		for i := range perr.Problems {
			if perr.Problems[i].Pos.Line == 0 {
				perr.Problems[i].Pos = at
			}
		}
	}
	return err
}

// largestFirst orders the levels by the open files and rate they need,
// largest first, so a refusal gives the figures of the level that needs
// the most (a sweep to 100k users was told the 25k level's count).
func largestFirst(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration) []float64 {
	need := func(v float64) (int64, float64) {
		lp, err := p.AtLevel(vary, v, ramp, hold)
		if err != nil {
			return 0, 0
		}
		k := lp.PeakOf(1)
		return k.Files(), k.Rate
	}
	out := slices.Clone(values)
	slices.SortStableFunc(out, func(a, b float64) int {
		fa, ra := need(a)
		fb, rb := need(b)
		return cmp.Or(cmp.Compare(fb, fa), cmp.Compare(rb, ra))
	})
	return out
}

// darwinOpenFiles is the usable open-files limit of a macOS process from
// its soft and hard RLIMIT_NOFILE: the hard one unless it is RLIM_INFINITY
// (1<<63 - 1 there), which no process can reach. It is here, not in
// fit_darwin.go, so the tests check it on every system.
func darwinOpenFiles(soft, hard uint64) uint64 {
	if hard >= math.MaxInt64 {
		return soft
	}
	return hard
}
