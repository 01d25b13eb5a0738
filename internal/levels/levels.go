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
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
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
	// Checkpoint and Started are left to the caller; Progress is called
	// for the measured part only.
	Run run.Options
	// Ramp runs before each level from zero users (or arrivals) up to it,
	// as a separate run that is not measured: the level's figures then
	// describe only its steady part.
	Ramp time.Duration
	Hold time.Duration
	// SLO is judged on each level's result.
	SLO []string
	// StopAtFail ends the run at the first level that misses its SLO
	// (gates); without it every level runs (sweep).
	StopAtFail bool
	// Event, when set, is called as each phase starts.
	Event func(Event)
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
	out := &Outcome{Failed: -1}
	var levels []result.Level
	for i, v := range values {
		lv, err := runLevel(ctx, p, vary, v, i, len(values), o)
		if err != nil {
			if len(levels) == 0 {
				return nil, err
			}
			// Keep what ran; the caller says the run could not complete.
			out.Result = Combine(p, levels)
			return out, err
		}
		levels = append(levels, lv)
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

// runLevel runs the unmeasured ramp, if any, then the measured hold.
func runLevel(ctx context.Context, p *plan.Plan, vary string, v float64, i, n int, o Options) (result.Level, error) {
	lv := result.Level{Vary: vary, Value: v}
	lp, err := p.AtLevel(vary, v, o.Ramp, o.Hold)
	if err != nil {
		return lv, err
	}
	ev := func(phase string, d time.Duration) {
		if o.Event != nil {
			o.Event(Event{Vary: vary, Value: v, Phase: phase, Duration: d, Index: i, Count: n})
		}
	}
	ro := o.Run
	if o.Ramp > 0 {
		ev("ramp", o.Ramp)
	}
	// The ramp and the hold are one run, so users and connections carry on
	// from the ramp into the level as they would in production; the ramp is
	// cut off the figures afterwards (Since), from a snapshot taken as the
	// hold begins.
	var (
		cutMu  sync.Mutex
		cut    *result.Result
		cancel = make(chan struct{})
	)
	defer close(cancel)
	if o.Ramp > 0 {
		caller := o.Run.Started
		ro.Started = func(snap func(string) *result.Result) {
			if caller != nil {
				caller(snap)
			}
			t := time.NewTimer(o.Ramp)
			go func() {
				defer t.Stop()
				select {
				case <-t.C:
				case <-cancel:
					return
				}
				s := snap("")
				cutMu.Lock()
				cut = s
				cutMu.Unlock()
				ev("hold", o.Hold)
			}()
		}
	} else {
		ev("hold", o.Hold)
	}
	res, err := run.Run(ctx, lp, ro)
	if err != nil {
		return lv, err
	}
	cutMu.Lock()
	before := cut
	cutMu.Unlock()
	if o.Ramp > 0 {
		if before == nil {
			// Interrupted during the ramp: nothing of the level was measured.
			res = emptyPartial(lp, res.Run.PartialReason)
		} else {
			steady, err := Since(res, before)
			if err != nil {
				return lv, fmt.Errorf("level %s: cutting off the ramp: %w", FormatLevel(vary, v), err)
			}
			res = steady
		}
	}
	Judge(res, lp, o.SLO)
	lv.Result = res
	lv.SLO = res.Thresholds
	lv.Pass = gate.AllPass(res.Thresholds) && !res.Run.Partial
	return lv, nil
}

// Judge sets a level's verdicts: its SLO (the plan's thresholds when none
// are given) and its indicators.
func Judge(res *result.Result, p *plan.Plan, slo []string) {
	if len(slo) == 0 {
		for _, t := range p.Thresholds {
			slo = append(slo, t.Value)
		}
	}
	res.Thresholds = gate.Evaluate(res, slo)
	res.Indicators = gate.Indicators(res)
}

// emptyPartial stands for a level interrupted before its measured part.
func emptyPartial(p *plan.Plan, reason string) *result.Result {
	now := time.Now()
	return &result.Result{
		Schema: result.Schema,
		Plan:   result.PlanInfo{Name: p.Name, File: p.File, Source: string(p.Source)},
		Run: result.RunInfo{Started: now, Ended: now, Model: p.Load.Model.String(),
			Segment: result.Segment{Count: 1}, Partial: true, PartialReason: reason},
		Totals:     result.Totals{ByClass: map[string]int64{}},
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
}

// Combine builds the whole-run result: totals, steps and series of every
// level merged (histograms exactly), each level's verdicts as thresholds
// named by level, and indicators of the whole including those only a
// sequence of levels shows.
func Combine(p *plan.Plan, levels []result.Level) *result.Result {
	var rs []*result.Result
	for _, l := range levels {
		if l.Result != nil && l.Result.Totals.Requests > 0 {
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
	top.Run.Partial = len(partial) > 0
	top.Run.PartialReason = strings.Join(partial, "; ")
	top.Thresholds = []result.Threshold{}
	for _, l := range levels {
		for _, t := range l.SLO {
			t.Expr = fmt.Sprintf("%s %s: %s", l.Vary, FormatLevel(l.Vary, l.Value), t.Expr)
			top.Thresholds = append(top.Thresholds, t)
		}
	}
	top.Indicators = gate.LevelIndicators(levels)
	for _, in := range gate.Indicators(top) {
		// Saturation across levels says more than the same finding in the
		// concatenated series, and one finding should not be told twice.
		if in.ID == "saturated" && len(top.Indicators) > 0 {
			continue
		}
		top.Indicators = append(top.Indicators, in)
	}
	top.Levels = levels
	return top
}
