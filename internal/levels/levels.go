// Package levels runs one plan at several load levels: scaling gates that
// stop at the first failing level, sweeps that run every level into one
// table, and a capacity search for the highest open-model rate that meets
// the SLOs. Each level is a normal run; the outcome is one result whose
// top-level figures cover the whole run and whose levels hold each level's
// complete result.
package levels

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/vu"
)

// Event tells a caller what is starting, for progress lines.
type Event struct {
	Vary  string
	Value float64
	// Phase is "ramp" (not measured) or "hold".
	Phase    string
	Duration time.Duration
	Index    int // of the level, from 0
	Count    int // levels planned (0 when not known in advance: capacity)
}

// Options shape a multi-level run.
type Options struct {
	// Run is passed to every level's run (target, TLS, version). Its
	// Checkpoint is left to the caller, its Handle is the level's own;
	// Progress is called for the measured part only.
	Run run.Options
	// Ramp runs before each level from zero users (or arrivals) up to it,
	// in the level's run but not measured: the level's figures describe
	// only its steady part, from when its population is in place.
	Ramp time.Duration
	Hold time.Duration
	// SLO is judged on each level's result.
	SLO []string
	// Overrun is how long past Ramp a level waits for its population to be
	// in place before it is measured anyway (and fails); default Ramp, at
	// least MinOverrun.
	Overrun time.Duration
	// StopAtFail ends the run at the first level that misses its SLO
	// (gates); without it every level runs (sweep).
	StopAtFail bool
	// Event, when set, is called as each phase starts.
	Event func(Event)
	// Level, when set, hears each level's run as it starts: its handle
	// gives partial results of the level's run (ramp included) so far.
	Level func(vary string, value float64, h *run.Handle)
	// Done, when set, hears each level as it ends, judged.
	Done func(result.Level)
	// Runner, when set, runs each level in place of this process (local
	// workers: the level's share in each of several processes, merged and
	// judged here); it returns the level judged, as runLevel does.
	Runner func(ctx context.Context, vary string, v float64, i, n int, o Options) (result.Level, error)
	// Signals and Forward are the session's (session.Control), for a
	// Runner whose processes hear Ctrl-C themselves: while Forward(true)
	// holds, the interrupts come on Signals for it to pass on, and ctx
	// stays, so the processes stop and write their partials as a
	// `run --workers` does.
	Signals <-chan os.Signal
	Forward func(on bool)
	// LoadOver, when set, hears the whole run once its last level ended
	// and before the plan's teardown runs (gates, sweeps; a capacity
	// search's is CapacityOptions.Found): the teardown may take
	// TeardownTimeout, and the load's result is whole by then, to be
	// saved before it and kept should the process end during it.
	LoadOver func(*Outcome)
	// Judge draws a level's verdict, pass or not, from its result, its
	// criteria and whether its population was in place (session.LevelPass:
	// the verdict is drawn in one place, the session).
	Judge func(result.Level) bool
}

// Outcome is a finished multi-level run.
type Outcome struct {
	// Result covers the whole run; Result.Levels holds each level.
	Result *result.Result
	// Failed is the first level that missed its SLO, or -1.
	Failed int
	// Interrupted is set when ctx ended the run early.
	Interrupted bool
}

// Run runs p at each value of vary in order.
func Run(ctx context.Context, p *plan.Plan, vary string, values []float64, o Options) (*Outcome, error) {
	if len(values) == 0 {
		return nil, errors.New("no levels to run")
	}
	// Fail before any load on a level the plan cannot take.
	for _, v := range values {
		if _, err := p.AtLevel(vary, v, o.Ramp, o.Hold); err != nil {
			return nil, err
		}
	}
	o.carry()
	out, err := runLevels(ctx, p, vary, values, o)
	if o.LoadOver != nil && p.Teardown != nil && resultOf(out) != nil {
		o.LoadOver(out)
	}
	tearDown(p, o, resultOf(out))
	return out, err
}

func resultOf(o *Outcome) *result.Result {
	if o == nil {
		return nil
	}
	return o.Result
}

func runLevels(ctx context.Context, p *plan.Plan, vary string, values []float64, o Options) (*Outcome, error) {
	out := &Outcome{Failed: -1}
	var levels []result.Level
	for i, v := range values {
		lv, err := o.level(ctx, p, vary, v, i, len(values))
		if err != nil {
			if len(levels) == 0 {
				return nil, err
			}
			// Keep what ran; the caller says the run could not complete.
			out.Result = Combine(p, levels)
			return out, err
		}
		levels = append(levels, lv)
		if o.Done != nil {
			o.Done(lv)
		}
		if lv.Result.Run.Partial {
			out.Interrupted = true
			break
		}
		if !lv.Pass && out.Failed < 0 {
			out.Failed = i
			if o.StopAtFail {
				break
			}
		}
	}
	out.Result = Combine(p, levels)
	return out, nil
}

// level runs one level: through Runner when set, else in this process.
func (o Options) level(ctx context.Context, p *plan.Plan, vary string, v float64, i, n int) (result.Level, error) {
	if o.Runner != nil {
		return o.Runner(ctx, vary, v, i, n, o)
	}
	return runLevel(ctx, p, vary, v, i, n, o)
}

// carry makes the levels of one command one test for the plan's data: a
// unique row sent at one level is not sent again at the next; and for its
// setup and teardown: they run once, around all the levels.
func (o *Options) carry() {
	if o.Run.Carry == nil {
		o.Run.Carry = &vu.Carry{}
	}
	if o.Run.Lifecycle == nil {
		o.Run.Lifecycle = &run.Lifecycle{}
	}
}

// tearDown runs the plan's teardown once after the last level, however
// the levels ended (a failing gate, Ctrl-C, a level that could not run),
// and adds it to the whole run's result when there is one.
func tearDown(p *plan.Plan, o Options, res *result.Result) {
	ph := o.Run.Lifecycle.Teardown(p, o.Run)
	if ph == nil || res == nil {
		return
	}
	if res.Workflow == nil {
		res.Workflow = &result.Workflow{}
	}
	res.Workflow.Teardown = ph
}

// workflowOf is the levels' workflow as one test's: the setup the first
// level ran (later levels reuse its captures and report none) and every
// level's renewals.
func workflowOf(levels []result.Level) *result.Workflow {
	var out *result.Workflow
	for _, l := range levels {
		if l.Result == nil || l.Result.Workflow == nil {
			continue
		}
		w := l.Result.Workflow
		if out == nil {
			out = &result.Workflow{}
		}
		out.Renewals += w.Renewals
		if out.Setup == nil {
			out.Setup = w.Setup
		}
		if out.Teardown == nil {
			out.Teardown = w.Teardown
		}
	}
	return out
}

// rampWait is how long a level waits for its population to be in place
// before it measures anyway: the planned ramp plus as long again, at least
// MinOverrun.
func (o Options) rampWait() time.Duration {
	over := o.Overrun
	if over <= 0 {
		over = max(o.Ramp, MinOverrun)
	}
	return o.Ramp + over
}

// MinOverrun is the least a ramp may overrun before the level is measured
// anyway: thousands of connections opening against a slow hub take
// seconds whatever the ramp says.
const MinOverrun = 30 * time.Second

// overranBy is how far past the planned ramp the population may come into
// place before the ramp counts as overrun: the generator checks every few
// tens of milliseconds, and a busy machine adds its own delay.
func overranBy(planned time.Duration) time.Duration {
	return max(500*time.Millisecond, planned/10)
}

// endOfHold is what a level's figures end with: the snapshot taken as
// its hold ended, with the finished run's verdict on how it ended and its
// connections and monitors; the run itself when it was interrupted
// before the hold ended.
func endOfHold(ran, atEnd *result.Result) *result.Result {
	if atEnd == nil || ran.Run.Partial {
		return ran
	}
	e := *atEnd
	e.Run.Partial, e.Run.PartialReason, e.Run.StopReason = false, "", ran.Run.StopReason
	e.Connections, e.Monitors = flowAtHoldEnd(ran.Connections, atEnd.Connections), ran.Monitors
	// A snapshot's series ends at the last interval closed before it, so
	// a short hold could be left without any: the run's own series, to
	// the interval the hold ended in, charts it.
	e.Series = seriesUntil(ran.Series, atEnd.Run.DurationS)
	return &e
}

// flowAtHoldEnd is the finished run's connections (every attempt, how
// each ended, the peak) with the traffic counted when the hold ended
// (pushes, messages, bytes): the instant the level's connection steps were
// read at, so a push target's count agrees with its step's.
func flowAtHoldEnd(ran, atEnd *result.Connections) *result.Connections {
	if ran == nil || atEnd == nil {
		return ran
	}
	at := map[string]result.ConnScenario{}
	for _, s := range atEnd.Scenarios {
		at[s.Scenario] = s
	}
	out := &result.Connections{Scenarios: make([]result.ConnScenario, len(ran.Scenarios))}
	for i, s := range ran.Scenarios {
		if a, ok := at[s.Scenario]; ok {
			s.Pushes, s.OtherPushes = a.Pushes, a.OtherPushes
			s.MessagesIn, s.MessagesOut, s.BytesIn, s.BytesOut = a.MessagesIn, a.MessagesOut, a.BytesIn, a.BytesOut
		}
		out.Scenarios[i] = s
	}
	return out
}

func fmtS(s float64) string {
	return (time.Duration(s*10) * time.Second / 10).String()
}

// rampIndicator tells that a level's ramp overran, which is why the level
// (and the command) took longer than planned, and what was measured.
func rampIndicator(lv result.Level) (result.Indicator, bool) {
	if !lv.RampOverran && lv.NotInPlace == "" {
		return result.Indicator{}, false
	}
	msg := fmt.Sprintf("The ramp took %s, planned %s - the level was measured from when its population was in place", fmtS(lv.RampS), fmtS(lv.RampPlannedS))
	if lv.NotInPlace != "" {
		msg = "The ramp overran: " + lv.NotInPlace + " - the level fails"
	}
	return result.Indicator{ID: "ramp_overran", Severity: gate.SeverityWarn, Message: msg,
		Evidence: map[string]float64{"ramp_s": lv.RampS, "ramp_planned_s": lv.RampPlannedS}}, true
}

// notMeasured stands for a level whose run ended before its population was
// in place: complete, but with nothing measured.
func notMeasured(p *plan.Plan, ran *result.Result, reason string) *result.Result {
	r := emptyPartial(p, "")
	r.Run.Partial, r.Run.PartialReason = false, ""
	r.Run.StopReason = reason
	r.Run.Started, r.Run.Ended = ran.Run.Ended, ran.Run.Ended
	return sameRun(r, ran)
}

// sameRun gives r, which stands for a level with nothing measured, the
// identity of the run it stands for: the tool, the plan and the segment,
// so a --workers level whose segments stopped at different moments still
// merges (one segment's empty level was "a whole run" with no plan hash,
// and the merge refused it, leaving no result at all).
func sameRun(r, ran *result.Result) *result.Result {
	r.Tool, r.Plan, r.Run.Segment = ran.Tool, ran.Plan, ran.Run.Segment
	return r
}

// Judge sets a level's verdicts (Criteria: its SLO and the plan's
// thresholds) and its indicators.
func Judge(res *result.Result, p *plan.Plan, slo []string) {
	res.Thresholds = gate.Evaluate(res, Criteria(p, slo))
	res.Indicators = gate.Indicators(res)
}

// Criteria is what every level is judged by: the command's SLO (gates.slo,
// --slo) and then the plan's thresholds, each once. A level is judged like
// a run, so a threshold the plan states is never dropped because gates
// also set an SLO; both must hold at every level.
func Criteria(p *plan.Plan, slo []string) []string {
	out := append([]string(nil), slo...)
	for _, t := range p.Thresholds {
		if !slices.Contains(out, t.Value) {
			out = append(out, t.Value)
		}
	}
	return out
}

// emptyPartial stands for a level interrupted before its measured part.
func emptyPartial(p *plan.Plan, reason string) *result.Result {
	now := time.Now()
	return &result.Result{
		Schema: result.Schema,
		Plan:   run.PlanInfo(p, ""),
		Run: result.RunInfo{Started: now, Ended: now, Model: p.Load.Model.String(),
			Segment: result.Segment{Count: 1}, Partial: true, PartialReason: reason},
		Totals:     result.Totals{ByClass: map[string]int64{}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
}

// measured reports whether a level's result holds anything to merge: HTTP
// requests, steps, or connection attempts. A connection-only level sends
// no HTTP request, so counting requests alone would leave out every level
// of such a run.
func measured(r *result.Result) bool {
	if r.Totals.Requests > 0 || len(r.Steps) > 0 {
		return true
	}
	if r.Connections != nil {
		for _, s := range r.Connections.Scenarios {
			if s.Attempts > 0 {
				return true
			}
		}
	}
	return false
}

// NamedVerdicts are a multi-level result's thresholds: each level's
// verdicts, named by level ("users 250: p95 < 500ms"). The levels are
// judged one by one; their sum, which ran no single load, is not.
func NamedVerdicts(levels []result.Level) []result.Threshold {
	out := []result.Threshold{}
	for _, l := range levels {
		for _, t := range l.SLO {
			t.Expr = fmt.Sprintf("%s %s: %s", l.Vary, FormatLevel(l.Vary, l.Value), t.Expr)
			out = append(out, t)
		}
	}
	return out
}

// Combine builds the whole-run result: totals, steps and series of every
// level merged (histograms exactly), each level's verdicts as thresholds
// named by level, and indicators of the whole including those only a
// sequence of levels shows.
func Combine(p *plan.Plan, levels []result.Level) *result.Result {
	var rs []*result.Result
	for _, l := range levels {
		if l.Result != nil && measured(l.Result) {
			rs = append(rs, l.Result)
		}
	}
	var top *result.Result
	if len(rs) > 0 {
		m, err := merge.Options{Force: true}.Results(rs)
		if err == nil {
			top = m
		}
	}
	if top == nil {
		// Nothing ran, or levels of different models (a capacity search of
		// a closed plan never mixes, but be safe): describe the last level.
		if len(levels) > 0 && levels[len(levels)-1].Result != nil {
			c := *levels[len(levels)-1].Result
			top = &c
		} else {
			top = emptyPartial(p, "no level ran")
		}
	}
	// Levels ran one after another, so the whole run's peak is the largest
	// level's, not the sum merge gives segments that ran side by side.
	top.Run.MaxUsers, top.Run.PeakRate = 0, 0
	partial := []string{}
	for _, l := range levels {
		if l.Result == nil {
			continue
		}
		top.Run.MaxUsers = max(top.Run.MaxUsers, l.Result.Run.MaxUsers)
		top.Run.PeakRate = max(top.Run.PeakRate, l.Result.Run.PeakRate)
		if l.Result.Run.Partial {
			partial = append(partial, fmt.Sprintf("%s %s: %s", l.Vary, FormatLevel(l.Vary, l.Value), l.Result.Run.PartialReason))
		}
	}
	if len(rs) > 0 {
		sequential(top, rs)
	}
	top.Run.Partial = len(partial) > 0
	top.Run.PartialReason = strings.Join(partial, "; ")
	top.Thresholds = NamedVerdicts(levels)
	top.Indicators = gate.LevelIndicators(levels)
	for _, in := range gate.Indicators(top) {
		// Saturation across levels says more than the same finding in the
		// concatenated series, and one finding should not be told twice.
		if in.ID == "saturated" && len(top.Indicators) > 0 {
			continue
		}
		top.Indicators = append(top.Indicators, in)
	}
	// Every level, measured or not, ran its part of the workflow.
	top.Workflow = workflowOf(levels)
	top.Levels = levels
	return top
}
