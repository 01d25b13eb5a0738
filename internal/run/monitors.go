package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// maxMonitorLead bounds how long the load waits for the monitors' first
// sample, however long a monitor's interval.
const maxMonitorLead = 5 * time.Second

// MonitorError means a required monitor could not start; no load was sent.
type MonitorError struct {
	// Err names each required monitor that failed and why, credentials
	// removed.
	Err error
}

func (e *MonitorError) Error() string {
	return fmt.Sprintf("a required monitor could not start, so no load was sent:\n%v", e.Err)
}

func (e *MonitorError) Unwrap() error { return e.Err }

// PlanMonitors turns the plan's monitors into collector specs.
func PlanMonitors(p *plan.Plan) []collect.Spec {
	out := make([]collect.Spec, 0, len(p.Monitors))
	for _, m := range p.Monitors {
		out = append(out, SpecOf(m))
	}
	return out
}

// SpecOf turns one plan monitor into a collector spec.
func SpecOf(m plan.MonitorSpec) collect.Spec {
	return collect.Spec{
		Kind: m.Kind, Target: m.Target, Name: m.Name,
		Interval: m.Interval, Timeout: m.Timeout, Required: m.Required,
		Select: m.Select, Queries: m.Queries,
	}
}

// CheckMonitors validates the plan's monitors as the collectors will (URL
// forms, selector syntax), without connecting to anything. Each problem
// starts with the monitor's file:line:col.
func CheckMonitors(p *plan.Plan) []string {
	var out []string
	for _, m := range p.Monitors {
		if err := SpecOf(m).Validate(); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", m.Pos, err))
		}
	}
	return out
}

// monitors is a run's collectors and the clock they share with the load.
type monitors struct {
	set           *collect.Set
	startProblems []result.MonitorProblem

	// The monitors' clock starts lead after its first reading, which
	// collect.Start makes only once every monitor has connected: so the
	// first samples land one interval before the load, however long
	// connecting took. The load starts at that zero, or as soon after it
	// as it can; into moves the series onto the load's clock by
	// the difference, so both sides share one zero exactly.
	lead time.Duration
	once sync.Once
	zero time.Time
}

func (m *monitors) clock() float64 {
	return time.Since(m.zeroTime()).Seconds()
}

func (m *monitors) zeroTime() time.Time {
	m.once.Do(func() { m.zero = time.Now().Add(m.lead) })
	return m.zero
}

// startMonitors connects the monitors the options (or else the plan) name,
// plus the generator's own process, and starts sampling. A monitor that
// cannot connect is a warning, unless it is required: then nothing keeps
// running and the error is a *MonitorError.
func (r *runner) startMonitors(ctx context.Context) error {
	specs := r.opts.Monitors
	if specs == nil {
		specs = PlanMonitors(r.plan)
	}
	if seg := r.seg(); seg.Index > 0 {
		// The servers are one however many segments load them: segment 0
		// watches them, so a merged result has one series per metric and
		// a database is not polled N times. Every segment still records
		// its own process (merge adds those up). A required monitor is
		// still connected once here and let go, so that every segment
		// refuses to send load when it cannot start, as one process does,
		// rather than the others running without segment 0.
		var required []collect.Spec
		for _, s := range specs {
			if s.Required {
				required = append(required, s)
			}
		}
		if len(required) > 0 {
			set, problems, err := collect.Start(ctx, required, func() float64 { return 0 })
			if err != nil {
				if set == nil && problems == nil {
					return err
				}
				return &MonitorError{Err: err}
			}
			set.Stop()
		}
		specs = nil
	}
	m := &monitors{}
	if at := r.opts.StartAt; !at.IsZero() {
		// A segment of a distributed test: every segment's clock, the
		// monitors' included, counts from the agreed start.
		m.once.Do(func() { m.zero = at })
	}
	for _, s := range specs {
		iv := s.Interval
		if iv <= 0 {
			iv = collect.DefaultInterval
		}
		m.lead = min(max(m.lead, iv), maxMonitorLead)
	}
	all := append(append(make([]collect.Spec, 0, len(specs)+1), specs...), collect.SelfSpec())
	set, problems, err := collect.Start(ctx, all, m.clock)
	if err != nil {
		if set == nil && problems == nil {
			// An invalid spec: a usage error the caller should have caught.
			return err
		}
		return &MonitorError{Err: err}
	}
	m.set, m.startProblems = set, problems
	if r.opts.MonitorWarning != nil {
		for _, p := range problems {
			r.opts.MonitorWarning(p.Message)
		}
	}
	r.mon = m
	return nil
}

// loadStart waits for the monitors' zero, one interval after their first
// samples, calls ready, and returns the load's start: now.
func (m *monitors) loadStart(ctx context.Context, ready func()) time.Time {
	if m == nil {
		ready()
		return time.Now()
	}
	if d := time.Until(m.zeroTime()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			// Interrupted before the load: start it (and stop it at
			// once) all the same.
			t.Stop()
		}
	}
	ready()
	return time.Now()
}

// into adds the monitor series and problems to a result, on the clock of
// a load that started at start: a snapshot for checkpoints, everything
// once the run is over. Stopping never waits long on a stuck monitor
// (collect.Set.Stop).
func (m *monitors) into(res *result.Result, start time.Time, checkpoint bool) {
	if m == nil {
		return
	}
	var series map[string]result.MonitorSeries
	var probs []result.MonitorProblem
	if checkpoint {
		series, probs = m.set.Snapshot()
	} else {
		series, probs = m.set.Stop()
	}
	all := append(append([]result.MonitorProblem(nil), m.startProblems...), probs...)
	// Onto the load's clock: t = 0 where the load started.
	if off := start.Sub(m.zeroTime()).Seconds(); off != 0 {
		shifted := make(map[string]result.MonitorSeries, len(series))
		for k, s := range series {
			shifted[k] = s.Shifted(-off)
		}
		series = shifted
		for i := range all {
			all[i].T -= off
			if all[i].LastT != 0 {
				all[i].LastT -= off
			}
		}
	}
	if len(series) > 0 {
		res.Monitors = series
	}
	if len(all) > 0 {
		res.MonitorProblems = all
	}
}

// finish lets the monitors sample one more interval after the load, so
// the drain shows and a short run still has its last points, then stops
// them. An interrupted run stops them at once.
func (m *monitors) finish(ctx context.Context) {
	if m == nil {
		return
	}
	if m.lead > 0 && ctx.Err() == nil {
		t := time.NewTimer(m.lead)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	m.stop()
}

// stop ends sampling; it is safe without monitors and more than once.
func (m *monitors) stop() {
	if m != nil {
		m.set.Stop()
	}
}
