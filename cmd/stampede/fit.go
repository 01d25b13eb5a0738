package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
)

// checkFit refuses, before any load, a plan that one process of the run
// cannot hold (plan.CheckFit): past the open-files limit the run would
// fail on connections it cannot open and on its own result file. When the
// default max_in_flight is lowered to fit, it says so on stderr: the run
// may then drop arrivals the plan never asked to drop.
func checkFit(p *plan.Plan, processes int) error {
	limit := openFilesLimit()
	if msg := p.LowerToFit(processes, limit); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
	}
	if err := p.CheckFit(processes, limit); err != nil {
		return fail(exitUsage, fmt.Errorf("invalid plan:\n%v", err))
	}
	return nil
}

// checkLevelsFit checks every level of gates, sweep or capacity as one
// process holds it: the plan's own stages say nothing of the levels, so
// without this a level past the open-files limit would only fail once the
// levels before it had run.
func checkLevelsFit(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration) error {
	return checkLevelsFitIn(p, vary, values, ramp, hold, 1)
}

// checkLevelsFitIn checks every level as one of processes processes holds
// its share (gates, sweep and capacity with --workers).
func checkLevelsFitIn(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration, processes int) error {
	limit := openFilesLimit()
	// An open plan's rate and tenants levels keep its max_in_flight, so
	// lowering the default here is what those levels run with.
	if vary != plan.VaryUsers {
		if msg := p.LowerToFit(processes, limit); msg != "" {
			fmt.Fprintln(os.Stderr, msg)
		}
	}
	for _, v := range largestFirst(p, vary, values, ramp, hold) {
		lp, err := p.AtLevel(vary, v, ramp, hold)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("level %s %s: %v", vary, levels.FormatLevel(vary, v), err))
		}
		err = lp.CheckFit(processes, limit)
		var perr *plan.Error
		if errors.As(err, &perr) {
			// A level's stages are made up, so their place in the file
			// is the gates' own (or the plan's, for a sweep's levels).
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
		if err != nil {
			return fail(exitUsage, fmt.Errorf("invalid plan at level %s %s:\n%v", vary, levels.FormatLevel(vary, v), err))
		}
	}
	return nil
}

// processes is how many processes share the run: the segment count of
// --segment i/N (each a process), else 1.
func (d *distFlags) processes() int {
	s, err := d.seg()
	if err != nil {
		return 1
	}
	return max(s.Norm().Count, 1)
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
