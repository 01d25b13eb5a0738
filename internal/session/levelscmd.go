package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// LevelsRequest is `stampede gates` or `stampede sweep`: the plan run
// level by level.
type LevelsRequest struct {
	Kind       string // "gates" or "sweep": names the default result file
	PlanFile   string
	Plan       *plan.Plan
	Vary       string
	Values     []float64
	Ramp, Hold time.Duration
	SLO        []string
	StopAtFail bool // gates: stop at the first level that fails
	Out        string
	Demo       string
	Quiet      bool
	Format     string // text or md
	Split      LevelSplit
	Outputs    Outputs
}

// Levels runs gates or a sweep, prints the levels' table and says where
// the result is; the error carries the exit code.
func (pr Process) Levels(j LevelsRequest) error {
	p := j.Plan
	if err := pr.checkLevels(j); err != nil {
		return err
	}
	j.Outputs.Segment = j.Split.Segment
	out, s, opts, stop, err := pr.prepareLevels(p, j.Kind, j.Out, j.Demo, j.Outputs, func(oo *openOutputs) {
		oo.planLevels(j.Vary, j.Values, j.Ramp, j.Hold)
	}, levelsNeed(p, j.Vary, j.Values, j.Ramp, j.Hold))
	if err != nil {
		return err
	}
	defer s.Close()
	defer stop()
	if err := j.Split.apply(&opts); err != nil {
		return err
	}
	disp := &levelsLive{stderr: pr.Stderr, quiet: j.Quiet, announce: func(e levels.Event) string {
		return fmt.Sprintf("level %d/%d: %s %s - %s %v%s", e.Index+1, e.Count, e.Vary,
			levels.FormatLevel(e.Vary, e.Value), e.Phase, e.Duration, map[bool]string{true: " (not measured)"}[e.Phase == "ramp"])
	}}
	lo := levels.Options{Run: opts, Ramp: j.Ramp, Hold: j.Hold, SLO: j.SLO, StopAtFail: j.StopAtFail}
	lo.Run.Progress, lo.Event = disp.progress, disp.event
	if j.Split.Segment != "" {
		if err := pr.receivedSeed(p); err != nil {
			return Fail(ExitRun, err)
		}
		carry := opts.Carry
		lo.Done = func(lv result.Level) { reachedIDs(carry, lv) }
	}
	if lo.Runner, err = pr.levelRunner(j.Split, p, j.PlanFile, out); err != nil {
		return err
	}
	e := &Levels{Plan: p, Vary: j.Vary, Values: j.Values, Options: lo}
	pr.tuneGCForLevels(p, j.Vary, j.Values, j.Ramp, j.Hold)
	oc := s.Run(e)
	disp.done()
	if j.Split.Segment != "" && oc.Verdict == gate.Fail {
		// A segment's share is not the level: the coordinator judges the
		// merged level once. Its exit says only whether it ran (a pod that
		// exits non-zero fails its Job's index).
		oc.Verdict = gate.Pass
	}
	return pr.printLevels(oc, e, j, out)
}

// checkLevels refuses, before any load, levels the plan cannot run.
func (pr Process) checkLevels(j LevelsRequest) error {
	p := j.Plan
	if j.Format != "text" && j.Format != "md" {
		return Fail(ExitUsage, fmt.Errorf("--format %q: expected text or md", j.Format))
	}
	for _, v := range j.Values {
		if _, err := p.AtLevel(j.Vary, v, j.Ramp, j.Hold); err != nil {
			return Fail(ExitUsage, fmt.Errorf("level %s: %v", levels.FormatLevel(j.Vary, v), err))
		}
	}
	if err := j.Split.check(p); err != nil {
		return err
	}
	if j.Split.K8s != nil {
		// Each pod checks its own share against its own limits, as a
		// --segment process does.
		return j.Split.K8s.checkK8sLevels(p, len(j.Values))
	}
	return CheckLevelsFit(pr.Stderr, p, j.Vary, j.Values, j.Ramp, j.Hold, j.Split.processes())
}

// printLevels prints the levels' table, their notes and warnings, and
// which gate failed.
func (pr Process) printLevels(oc *Outcome, e *Levels, j LevelsRequest, out string) error {
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	res, stdout := oc.Result, pr.Stdout
	var err error
	if j.StopAtFail {
		err = levels.WriteGates(stdout, j.Vary, j.Values, levels.Criteria(j.Plan, j.SLO), res.Levels, j.Format)
	} else {
		err = levels.WriteSweep(stdout, res.Levels, j.Format)
	}
	if err != nil {
		return Fail(ExitRun, err)
	}
	levels.WriteLevelNotes(stdout, res.Levels)
	report.Warnings(stdout, res.Indicators)
	if j.Split.Emit {
		// A pod's level result, partial or not, for its coordinator.
		if err := dist.Emit(stdout, res); err != nil {
			return Fail(ExitRun, err)
		}
	}
	if oc.SaveErr != nil || oc.RunErr != nil {
		return oc.Err()
	}
	fmt.Fprintf(pr.Stderr, "result saved to %s\n", out)
	switch {
	case oc.Verdict == gate.Fail && j.StopAtFail && e.Outcome.Failed >= 0:
		l := res.Levels[e.Outcome.Failed]
		fmt.Fprintf(stdout, "\nGate %s %s failed", l.Vary, levels.FormatLevel(l.Vary, l.Value))
		if e.Outcome.Failed+1 < len(j.Values) {
			fmt.Fprintf(stdout, "; later levels were not run")
		}
		fmt.Fprintln(stdout)
	case oc.Verdict == gate.Pass && j.StopAtFail:
		fmt.Fprintln(stdout, "\n"+gatesPassed(res.Levels))
	}
	return oc.Err()
}

// prepareLevels does what gates, sweep and capacity all do before the
// first level, so a bad --out or --demo fails before any load: it names
// the result file when out is empty, opens the outputs (planned tells
// them the levels) and the session that writes the result, and starts the
// demo target when the plan asks for it. stop ends that target.
func (pr Process) prepareLevels(p *plan.Plan, kind, out, demoOpts string, outputs Outputs, planned func(*openOutputs), need int64) (string, *Session, run.Options, func(), error) {
	if out == "" {
		out = levelsOut(p, kind, time.Now())
	}
	oo, err := outputs.open(pr)
	if err != nil {
		return out, nil, run.Options{}, nil, err
	}
	s, err := Open(pr.options(Options{Out: out, Need: need, Sinks: oo.sinks, TestID: oo.testID}))
	if err != nil {
		closeSinks(oo.sinks)
		return out, nil, run.Options{}, nil, err
	}
	opts, stop, err := pr.levelRunOptions(p, demoOpts)
	if err != nil {
		s.Close()
		return out, nil, run.Options{}, nil, err
	}
	planned(oo)
	return out, s, opts, stop, nil
}

// levelRunOptions are every level's run options, with the demo target
// started when the plan asks for it.
func (pr Process) levelRunOptions(p *plan.Plan, demoOpts string) (run.Options, func(), error) {
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return run.Options{}, nil, err
	}
	opts := run.Options{Version: pr.Version, TLS: tlsConf, MaxProcs: pr.maxProcs()}
	url, stop, err := pr.startDemo(p, demoOpts, false)
	if err != nil {
		return opts, nil, err
	}
	opts.BaseURL = url
	return opts, stop, nil
}

// gatesPassed is the last line of gates that all met their criteria: a
// gate whose generator lagged met them on figures that are no verdict on
// the target, so it is not said to have passed.
func gatesPassed(ls []result.Level) string {
	var suspect []string
	for _, l := range ls {
		if l.Suspect != "" {
			suspect = append(suspect, levels.FormatLevel(l.Vary, l.Value))
		}
	}
	if len(suspect) == 0 {
		return "Every gate passed"
	}
	verb := "was"
	if len(suspect) > 1 {
		verb = "were"
	}
	return fmt.Sprintf("Every gate met its criteria, but %s %s suspect (the generator lagged): not a verdict on the target there",
		strings.Join(suspect, ", "), verb)
}
