package session

import (
	"fmt"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
)

// ExitUndetermined: the search ran, but the levels that bound its answer
// are suspect or generator-bound, so no capacity of the target was found.
const ExitUndetermined = 4

// CapacityRequest is `stampede capacity`.
type CapacityRequest struct {
	PlanFile   string
	Plan       *plan.Plan
	SLO        []string
	Start, Max float64
	StepHold   time.Duration
	Ramp       time.Duration
	Budget     time.Duration
	Out, Demo  string
	Quiet      bool
	Split      LevelSplit
	Dashboard  string
}

// CheckSLO refuses an SLO that does not parse, before any plan is read.
func CheckSLO(slo []string) error {
	for _, s := range slo {
		if _, err := gate.Parse(s); err != nil {
			return Fail(ExitUsage, fmt.Errorf("--slo: %v", err))
		}
	}
	return nil
}

// Capacity searches for the plan's capacity, prints every level and the
// answer, and says where the result is; the error carries the exit code.
func (pr Process) Capacity(r CapacityRequest) error {
	p := r.Plan
	if err := pr.checkCapacity(r); err != nil {
		return err
	}
	// The search's levels are not known in advance: set aside room for a
	// dozen of them.
	need := 12 * levelsNeed(p, plan.VaryRate, []float64{r.Start}, r.Ramp, r.StepHold)
	out, s, opts, stop, err := pr.prepareLevels(p, "capacity", r.Out, r.Demo, Outputs{Dashboard: r.Dashboard}, func(oo *openOutputs) {
		oo.planLevels(plan.VaryRate, nil, r.Ramp, r.StepHold)
	}, need)
	if err != nil {
		return err
	}
	defer s.Close()
	defer stop()
	disp := &levelsLive{stderr: pr.Stderr, quiet: r.Quiet, announce: func(e levels.Event) string {
		return fmt.Sprintf("trying %s - %s %v", levels.FormatLevel(e.Vary, e.Value), e.Phase, e.Duration)
	}}
	co := levels.CapacityOptions{Start: r.Start, Max: r.Max, Budget: r.Budget}
	lo := levels.Options{Run: opts, Hold: r.StepHold, Ramp: r.Ramp, SLO: r.SLO}
	lo.Run.Progress, lo.Event = disp.progress, disp.event
	if lo.Runner, err = pr.levelRunner(r.Split, p, r.PlanFile, out); err != nil {
		return err
	}
	e := &Levels{Plan: p, Options: lo, Capacity: &co}
	pr.tuneGCForLevels(p, plan.VaryRate, []float64{r.Start}, r.Ramp, r.StepHold)
	oc := s.Run(e)
	disp.done()
	return pr.printCapacity(oc, e, r, out)
}

// checkCapacity refuses, before any load, a search the plan cannot run.
func (pr Process) checkCapacity(r CapacityRequest) error {
	p := r.Plan
	if len(levels.Criteria(p, r.SLO)) == 0 {
		return Fail(ExitUsage, fmt.Errorf(`%s has no thresholds: give at least one --slo, such as --slo "p95 < 500ms" --slo "error_rate < 1%%"`, r.PlanFile))
	}
	for _, s := range r.SLO {
		if th, err := gate.Parse(s); err == nil {
			if msg := p.StepProblem(s, th); msg != "" {
				return Fail(ExitUsage, fmt.Errorf("--slo: %s", msg))
			}
		}
	}
	if cost := levels.LevelCost(p, r.Ramp, r.StepHold); r.Budget > 0 && r.Budget < cost {
		return Fail(ExitUsage, fmt.Errorf("--budget %v is shorter than one level, %v (--ramp %v, --step-hold %v and the plan's grace %v): no level could run", r.Budget, cost, r.Ramp, r.StepHold, p.Load.Grace))
	}
	if err := r.Split.check(p); err != nil {
		return err
	}
	// Every rate holds the same max_in_flight and connections, so the
	// first rate's open files are every rate's.
	if r.Start > 0 && r.StepHold > 0 {
		return CheckLevelsFit(pr.Stderr, p, plan.VaryRate, []float64{r.Start}, r.Ramp, r.StepHold, r.Split.processes())
	}
	return nil
}

// printCapacity prints the search and its answer; a capacity found from
// suspect levels is undetermined (exit 4).
func (pr Process) printCapacity(oc *Outcome, e *Levels, r CapacityRequest, out string) error {
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	if err := levels.WriteCapacity(pr.Stdout, e.Found, levels.Criteria(r.Plan, r.SLO)); err != nil {
		return Fail(ExitRun, err)
	}
	report.Warnings(pr.Stdout, oc.Result.Indicators)
	if oc.SaveErr == nil {
		fmt.Fprintf(pr.Stderr, "result saved to %s\n", out)
	}
	// No level passed: no capacity was found.
	if oc.SaveErr != nil || oc.RunErr != nil || oc.Verdict == gate.Incomplete || e.Found == nil || e.Found.Undetermined == "" {
		return oc.Err()
	}
	return Fail(ExitUndetermined, nil)
}
