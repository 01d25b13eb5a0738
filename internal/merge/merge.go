// Package merge combines result files into one: the segments of a
// distributed run, or repeated runs of one plan. Counts add up and HDR
// histograms merge exactly, so every percentile of the merged result is
// the one a single recorder would have reported for all the requests.
package merge

import (
	"errors"
	"fmt"

	"github.com/stampede-load/stampede/internal/result"
)

// Options changes how strictly inputs must agree.
type Options struct {
	// Force merges results of different plans (by SHA-256). Their sum is
	// rarely meaningful, so it takes a deliberate choice.
	Force bool
	// Names label the inputs (usually their file names) in errors and in
	// the merged partial reason; input i is called "input i+1" without one.
	Names []string
}

// InputError is a problem with one input, so a caller can name the file.
type InputError struct {
	Index int
	Name  string
	Err   error
}

func (e *InputError) Error() string { return e.Name + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ErrPlanMismatch is wrapped by the InputError of an input whose plan
// differs from the first input's.
var ErrPlanMismatch = errors.New("plan differs")

// Results merges rs into a new result; the inputs are not modified.
//
// Thresholds and indicators of the inputs are dropped: each was judged on
// its own share, and only the whole can be judged again (package gate does
// that, given the plan). Levels of multi-level runs merge level by level;
// a level keeps its SLO expressions with no measured value and Pass false
// until they are evaluated again on the merged level.
//
// The per-interval series are aligned on wall-clock time (run.started + t),
// so segments that started a little apart still line up. Counts in an
// interval add up; the interval's p50/p95/p99 cannot be merged exactly
// because results keep no per-interval histograms, so the merged value is
// the completed-weighted mean of the inputs' values — always between their
// smallest and largest, which is where the true merged quantile lies.
// Lag p99 takes the worst input, since the slowest generator decides how
// far its figures can be trusted.
func (o Options) Results(rs []*result.Result) (*result.Result, error) {
	if len(rs) == 0 {
		return nil, errors.New("nothing to merge: no results given")
	}
	for i, r := range rs {
		if r == nil {
			return nil, o.inputErr(i, errors.New("no result"))
		}
	}
	if err := o.check(rs); err != nil {
		return nil, err
	}
	first := rs[0]
	m := &result.Result{
		Schema: result.Schema,
		Tool:   first.Tool,
		Plan:   first.Plan,
	}
	var err error
	if m.Run, err = o.run(rs); err != nil {
		return nil, err
	}
	if m.Totals, err = o.totals(rs); err != nil {
		return nil, err
	}
	if m.Steps, err = o.steps(rs); err != nil {
		return nil, err
	}
	m.Series = o.series(rs, m.Run.Started)
	if m.Generator, err = o.generator(rs, m.Totals.Requests); err != nil {
		return nil, err
	}
	m.Samples = samples(rs)
	if flat := result.FlatSamples(m.Steps); len(flat) > 0 {
		m.Samples = flat
	}
	m.ErrorsTop = errorsTop(rs)
	m.Connections = connections(rs, m.Run.Started) // extra.go
	m.Workflow = workflow(rs)                      // workflow.go
	m.Monitors, m.MonitorProblems = o.monitors(rs, m.Run.Started)
	if m.TLS, err = o.tls(rs); err != nil {
		return nil, err
	}
	if m.Levels, err = o.levels(rs); err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		// Every input passed Check, so this is a bug here, not bad input.
		return nil, fmt.Errorf("merged result is inconsistent: %w", err)
	}
	return m, nil
}

func (o Options) name(i int) string {
	if i < len(o.Names) && o.Names[i] != "" {
		return o.Names[i]
	}
	return fmt.Sprintf("input %d", i+1)
}

func (o Options) inputErr(i int, err error) error {
	return &InputError{Index: i, Name: o.name(i), Err: err}
}

// check refuses inputs whose sum would not describe one test.
func (o Options) check(rs []*result.Result) error {
	first := rs[0]
	if err := first.Check(); err != nil {
		return o.inputErr(0, err)
	}
	seen := map[int]int{}
	for i, r := range rs {
		if i > 0 {
			if err := r.Check(); err != nil {
				return o.inputErr(i, err)
			}
		}
		if r.Schema != result.Schema {
			return o.inputErr(i, fmt.Errorf("schema %q, expected %q", r.Schema, result.Schema))
		}
		if i > 0 && !o.Force && r.Plan.SHA256 != first.Plan.SHA256 {
			return o.inputErr(i, fmt.Errorf("%w: sha256 %s, but %s has %s (use --force to merge anyway)",
				ErrPlanMismatch, short(r.Plan.SHA256), o.name(0), short(first.Plan.SHA256)))
		}
		if r.Run.Model != first.Run.Model {
			return o.inputErr(i, fmt.Errorf("model %q, but %s is %q; open and closed latencies mean different things and cannot be merged",
				r.Run.Model, o.name(0), first.Run.Model))
		}
		if latencyFrom(r.Run) != latencyFrom(first.Run) {
			return o.inputErr(i, fmt.Errorf("latencies count from %q, but %s's from %q",
				latencyFrom(r.Run), o.name(0), latencyFrom(first.Run)))
		}
		if r.Series.IntervalS != first.Series.IntervalS && len(r.Series.T) > 0 && len(first.Series.T) > 0 {
			return o.inputErr(i, fmt.Errorf("series interval %gs, but %s's is %gs",
				r.Series.IntervalS, o.name(0), first.Series.IntervalS))
		}
		seg := r.Run.Segment
		if (seg.Count > 1) != (first.Run.Segment.Count > 1) || (seg.Count > 1 && seg.Count != first.Run.Segment.Count) {
			return o.inputErr(i, fmt.Errorf("segment %s, but %s is segment %s; merge segments of one distributed run, or whole runs",
				segString(seg), o.name(0), segString(first.Run.Segment)))
		}
		if seg.Count > 1 {
			if j, dup := seen[seg.Index]; dup {
				return o.inputErr(i, fmt.Errorf("segment %s is also %s; merging it twice would count its requests twice",
					segString(seg), o.name(j)))
			}
			seen[seg.Index] = i
		}
	}
	return nil
}

func short(sha string) string {
	if sha == "" {
		return "(none)"
	}
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func segString(s result.Segment) string {
	if s.Count <= 1 {
		return "whole run"
	}
	return fmt.Sprintf("%d of %d", s.Index+1, s.Count)
}

// latencyFrom fills in what older files left empty, as the text report does.
func latencyFrom(run result.RunInfo) string {
	if run.LatencyFrom != "" {
		return run.LatencyFrom
	}
	if run.Model == "open" || run.Paced {
		return "intended"
	}
	return "send"
}
