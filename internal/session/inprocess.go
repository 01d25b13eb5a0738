package session

import (
	"context"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// InProcess runs the test in this process (run.Run): the whole test, or
// one segment of a distributed one (Options.Segment).
type InProcess struct {
	Plan *plan.Plan
	// Options are the run's; the session sets Checkpoint and Handle.
	Options run.Options
	// Warn, when set, hears why a segment's thresholds are not judged.
	Warn func(string)

	h run.Handle
	phaseOf
}

func (e *InProcess) Execute(ctx context.Context, c Control) (*result.Result, error) {
	o := e.Options
	o.Checkpoint = c.Checkpoint
	o.Handle = &e.h
	o.OnPhase = e.set
	return run.Run(ctx, e.Plan, o)
}

// Snapshot is the run so far; nil before its load started.
func (e *InProcess) Snapshot(reason string) *result.Result { return e.h.Snapshot(reason) }

// Judge evaluates the plan's thresholds, except on a segment: its share
// says nothing about the whole, whose thresholds are judged once, on the
// merged result, so neither its summary nor its file suggests a verdict.
func (e *InProcess) Judge(res *result.Result) gate.Outcome {
	Evaluate(res, e.Plan)
	if !e.Options.Segment.IsWhole() && len(res.Thresholds) > 0 {
		res.Thresholds = []result.Threshold{}
		if e.Warn != nil {
			e.Warn("thresholds are judged on the merged result of all segments, not on one segment")
		}
	}
	return gate.Outcome{Thresholds: res.Thresholds}
}

// Evaluate sets a result's verdict parts from the plan: its thresholds
// and the indicators. A nil plan has no thresholds.
func Evaluate(res *result.Result, p *plan.Plan) {
	var exprs []string
	if p != nil {
		exprs = make([]string, len(p.Thresholds))
		for i, t := range p.Thresholds {
			exprs[i] = t.Value
		}
	}
	res.Thresholds = gate.Evaluate(res, exprs)
	res.Indicators = gate.Indicators(res)
}
