package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// Levels runs the plan level by level (internal/levels): gates and sweeps
// through levels.Run, a capacity search through levels.SearchCapacity
// when Capacity is set. Each level is judged by its SLO as it ends; the
// session judges the whole from which level failed.
type Levels struct {
	Plan   *plan.Plan
	Vary   string
	Values []float64
	// Options are every level's; the executor adds its own hooks around
	// Level and Done.
	Options levels.Options
	// Capacity, when set, searches for the capacity instead of running
	// Values; its Options field is replaced by Options.
	Capacity *levels.CapacityOptions

	// Outcome (gates, sweep) or Found (capacity) is what ran, once Execute
	// returned, for the tables.
	Outcome *levels.Outcome
	Found   *levels.Capacity

	phaseOf // the plan's setup (the first level's) and teardown

	mu   sync.Mutex
	done []result.Level
	cur  result.Level
	h    *run.Handle
	// tornDown: the run and its teardown are over, and load is their
	// result (tearDownOver).
	tornDown bool
	// load is the whole run while the plan's teardown runs (LoadOver),
	// and quits are the snapshots of it the second Ctrl-C took, judged
	// as the run they are.
	load  *result.Result
	quits map[*result.Result]bool
}

func (e *Levels) Execute(ctx context.Context, c Control) (*result.Result, error) {
	o := e.hooked(c)
	if e.Capacity != nil {
		return e.searchCapacity(ctx, o, c)
	}
	outc, err := levels.Run(ctx, e.Plan, e.Vary, e.Values, o)
	e.mu.Lock()
	e.Outcome = outc
	e.tearDownOver(outc != nil && outc.Result != nil, func() *result.Result { return outc.Result })
	e.mu.Unlock()
	if outc == nil || outc.Result == nil {
		if err == nil {
			err = errors.New("no level ran")
		}
		return nil, err
	}
	return outc.Result, err
}

// hooked is the levels' options with the session's verdict and signals,
// and hooks that keep what ran for Snapshot around the caller's own
// Level and Done.
func (e *Levels) hooked(c Control) levels.Options {
	o := e.Options
	o.Run.OnPhase = e.set
	o.Judge = LevelPass
	if e.ForwardsSignals() {
		o.Signals, o.Forward = c.Signals, c.Forward
	}
	o.LoadOver = func(out *levels.Outcome) {
		e.mu.Lock()
		e.Outcome = out
		e.mu.Unlock()
		e.loadOver(out.Result, c.Checkpoint)
	}
	level, doneLv := o.Level, o.Done // the caller's, kept
	o.Level = func(vary string, value float64, h *run.Handle) {
		e.mu.Lock()
		e.cur, e.h = result.Level{Vary: vary, Value: value}, h
		e.mu.Unlock()
		if level != nil {
			level(vary, value, h)
		}
	}
	o.Done = func(lv result.Level) {
		e.mu.Lock()
		e.done = append(e.done, lv)
		e.h = nil
		e.mu.Unlock()
		if doneLv != nil {
			doneLv(lv)
		}
	}
	return o
}

// searchCapacity runs the capacity search with the levels' options o.
func (e *Levels) searchCapacity(ctx context.Context, o levels.Options, c Control) (*result.Result, error) {
	co := *e.Capacity
	co.Options = o
	co.Found = func(found *levels.Capacity) {
		e.mu.Lock()
		e.Found = found
		e.mu.Unlock()
		e.loadOver(found.Result, c.Checkpoint)
	}
	found, err := levels.SearchCapacity(ctx, e.Plan, co)
	e.mu.Lock()
	e.Found = found
	e.tearDownOver(found != nil && found.Result != nil, func() *result.Result { return found.Result })
	e.mu.Unlock()
	if found == nil || found.Result == nil {
		if err == nil {
			err = fmt.Errorf("no level could run within the budget of %v", co.Budget)
		}
		return nil, err
	}
	return found.Result, err
}

// ForwardsSignals: a level run in other processes (levels.Options.Runner,
// --workers) has its segments hear every signal, as `run --workers` has
// its workers: a second Ctrl-C makes them quit at once and write their
// partials, which are merged, rather than this process quitting and
// killing them with nothing of the level saved.
func (e *Levels) ForwardsSignals() bool { return e.Options.Runner != nil }

// Snapshot is the levels that ended and the one running so far, as one
// result marked partial; nil before the first level's load started.
func (e *Levels) Snapshot(reason string) *result.Result {
	e.mu.Lock()
	if e.load != nil {
		// Every level ended; only the teardown runs, or has just ended.
		// The levels are whole.
		cp := withWorkflow(e.load)
		if reason != "" {
			if !e.tornDown {
				cp.Workflow.Teardown = &result.Phase{Error: "cut off before it finished: " + reason}
			}
			if e.quits == nil {
				e.quits = map[*result.Result]bool{}
			}
			e.quits[cp] = true
		}
		e.mu.Unlock()
		return cp
	}
	lvs := append([]result.Level(nil), e.done...)
	cur, h := e.cur, e.h
	e.mu.Unlock()
	if h != nil {
		if snap := h.Snapshot(reason); snap != nil {
			// Judged so far, as a partial run is: the page of a plan with
			// thresholds said "no thresholds" until the first level ended.
			cur.Result = snap
			cur.SLO = gate.Evaluate(snap, levels.Criteria(e.Plan, e.Options.SLO))
			lvs = append(lvs, cur)
		}
	}
	if len(lvs) == 0 {
		return nil
	}
	res := levels.Combine(e.Plan, lvs)
	res.Run.Partial, res.Run.PartialReason = true, reason
	return res
}

// tearDownOver keeps, once the run and its teardown are over, the whole
// result with its teardown for a second Ctrl-C that comes before the
// session has it (as Workers does): not the levels read back as a
// partial, nor a teardown said to be cut off that finished. Under e.mu.
func (e *Levels) tearDownOver(ok bool, res func() *result.Result) {
	e.load = nil
	if ok {
		e.load = withWorkflow(res())
		e.tornDown = true
	}
}

// loadOver keeps the whole run for the time of the plan's teardown and
// checkpoints it before the teardown starts, as a plain run does: a second
// Ctrl-C during the teardown saves it complete with the teardown cut off,
// and a process killed then still leaves every level measured.
func (e *Levels) loadOver(res *result.Result, checkpoint func(*result.Result)) {
	// A copy of its own: package levels writes the teardown into res's
	// workflow when it ends, outside this lock, while Snapshot copies.
	e.mu.Lock()
	e.load = withWorkflow(res)
	e.mu.Unlock()
	if checkpoint == nil {
		return
	}
	checkpoint(duringTeardown(res))
}

// Judge draws the verdict from the levels: the run fails when a level
// failed its SLO; a capacity search fails only when no rate met them. The
// levels' own thresholds were judged as each level ended.
func (e *Levels) Judge(res *result.Result) gate.Outcome {
	e.mu.Lock()
	whole := e.quits[res]
	found, outc := e.Found, e.Outcome
	e.mu.Unlock()
	if e.Capacity != nil {
		if c := found; c != nil && (c.Result == res || whole) {
			// The answer goes in the file, for tools that read results
			// rather than the terminal.
			res.Indicators = append([]result.Indicator{CapacityIndicator(c)}, res.Indicators...)
			return gate.Outcome{LevelFailed: c.Rate == 0}
		}
		return gate.Outcome{LevelFailed: true}
	}
	if o := outc; o != nil && (o.Result == res || whole) {
		return gate.Outcome{Incomplete: o.Interrupted, LevelFailed: o.Failed >= 0}
	}
	// A snapshot: whatever it holds, the run did not end.
	return gate.Outcome{Incomplete: true}
}

// CapacityIndicator records a capacity search's answer with its evidence.
func CapacityIndicator(c *levels.Capacity) result.Indicator {
	ev := map[string]float64{"capacity_rate": c.Rate, "failed_rate": c.FailedAt}
	if c.KneeFound {
		ev["knee_followed_up_to"] = c.Knee.FollowedUpTo
		ev["knee_at_rate"] = c.Knee.AtRate
		ev["knee_achieved"] = c.Knee.AchievedRPS
	}
	if c.Little.RPS > 0 {
		ev["little_rps"] = c.Little.RPS
		ev["little_avg_latency_us"] = c.Little.AvgLatencyUS
		ev["little_closed_users"] = c.Little.ClosedUsers
	}
	msg := fmt.Sprintf("Capacity %g iterations/s (%s)", c.Rate, c.Stopped)
	if c.Undetermined != "" {
		ev["undetermined"] = 1
		msg = fmt.Sprintf("Capacity undetermined (%g iterations/s met the SLOs, %s): %s", c.Rate, c.Stopped, c.Undetermined)
	}
	if c.KneeFound {
		msg += fmt.Sprintf("; knee at %g/s: %s", c.Knee.AtRate, c.Knee.Reason)
	}
	if c.BoundBy != "" {
		msg += "; bound by " + c.BoundBy
	}
	return result.Indicator{ID: "capacity", Severity: gate.SeverityInfo, Message: msg, Evidence: ev}
}
