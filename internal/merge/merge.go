// Package merge combines result files into one: the segments of a
// distributed run, or repeated runs of one plan. Counts add up and HDR
// histograms merge exactly, so every percentile of the merged result is
// the one a single recorder would have reported for all the requests.
package merge

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

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

// Results merges rs with default options: all inputs must come from the
// same plan.
func Results(rs []*result.Result) (*result.Result, error) { return Options{}.Results(rs) }

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
	m.Connections = connections(rs) // extra.go
	m.Workflow = workflow(rs)       // workflow.go
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

func (o Options) run(rs []*result.Result) (result.RunInfo, error) {
	first := rs[0].Run
	out := result.RunInfo{
		Model:       first.Model,
		Paced:       first.Paced,
		LatencyFrom: latencyFrom(first),
		Segment:     result.Segment{Index: 0, Count: 1},
		Seed:        first.Seed,
		Engine:      first.Engine,
	}
	var measuredEnd, began time.Time
	var partial, stops []string
	for i, r := range rs {
		run := r.Run
		if out.Started.IsZero() || run.Started.Before(out.Started) {
			out.Started = run.Started
		}
		if run.Ended.After(out.Ended) {
			out.Ended = run.Ended
		}
		// A segment that began late (late_start_s) measured its duration
		// from when it began, not from the shared start time.
		b := run.Started.Add(seconds(run.LateStartS))
		if began.IsZero() || b.Before(began) {
			began = b
		}
		end := b.Add(seconds(run.DurationS))
		if end.After(measuredEnd) {
			measuredEnd = end
		}
		out.Paced = out.Paced || run.Paced
		if run.Engine != out.Engine {
			out.Engine = result.EngineMixed
		}
		if out.Seed != nil && (run.Seed == nil || *run.Seed != *out.Seed) {
			out.Seed = nil
		}
		// Segments split users and arrivals so that their shares sum to
		// the whole; repeated whole runs add load the same way.
		out.MaxUsers += run.MaxUsers
		out.PeakRate += run.PeakRate
		// The whole missed what the latest segment missed, at least.
		out.LateStartS = max(out.LateStartS, run.LateStartS)
		if run.Partial {
			reason := run.PartialReason
			if reason == "" {
				reason = "did not complete"
			}
			partial = append(partial, o.name(i)+": "+reason)
		}
		if run.StopReason != "" {
			stops = append(stops, o.name(i)+": "+run.StopReason)
		}
	}
	out.DurationS = max(measuredEnd.Sub(began), 0).Seconds()
	if first.Segment.Count > 1 {
		var missing []string
		for idx := 0; idx < first.Segment.Count; idx++ {
			if !slices.ContainsFunc(rs, func(r *result.Result) bool { return r.Run.Segment.Index == idx }) {
				missing = append(missing, fmt.Sprint(idx+1))
			}
		}
		if len(missing) > 0 {
			partial = append(partial, fmt.Sprintf("merged %d of %d segments (missing %s)",
				len(rs), first.Segment.Count, strings.Join(missing, ", ")))
		}
	}
	if len(partial) > 0 {
		out.Partial = true
		out.PartialReason = strings.Join(partial, "; ")
		if same := sameReason(rs); same != "" && len(rs) > 1 && len(partial) == len(rs) {
			// One Ctrl-C stops every segment alike: say it once.
			what := "inputs"
			if first.Segment.Count > 1 {
				what = "segments"
			}
			out.PartialReason = fmt.Sprintf("%s (all %d %s)", same, len(rs), what)
		}
	}
	out.StopReason = strings.Join(stops, "; ")
	return out, nil
}

// sameReason is the inputs' partial reason when every input is partial
// for the same one, else "". Reasons that differ only in when they struck
// ("interrupted (Ctrl-C) at 4s of 1m0s" in one segment, "at 5s" in another
// that saw the signal a moment later) are one reason, said with the span
// of those times.
func sameReason(rs []*result.Result) string {
	reason := rs[0].Run.PartialReason
	cause, total, first := splitReasonTime(reason)
	earliest, latest := first, first
	for _, r := range rs {
		if !r.Run.Partial {
			return ""
		}
		if r.Run.PartialReason == reason {
			continue
		}
		c, tot, at := splitReasonTime(r.Run.PartialReason)
		if cause == "" || c != cause || tot != total {
			return ""
		}
		earliest, latest = min(earliest, at), max(latest, at)
	}
	if earliest == latest {
		return reason
	}
	return fmt.Sprintf("%s at %v–%v of %s", cause, earliest, latest, total)
}

// reasonTime matches a reason that says when it struck: "CAUSE at 4s of 1m0s".
var reasonTime = regexp.MustCompile(`^(.+) at (\S+) of (\S+)$`)

// splitReasonTime splits a reason into its cause, the run's planned length
// and the time it struck; cause is "" when the reason names no time.
func splitReasonTime(reason string) (cause, total string, at time.Duration) {
	m := reasonTime.FindStringSubmatch(reason)
	if m == nil {
		return "", "", 0
	}
	d, err := time.ParseDuration(m[2])
	if err != nil {
		return "", "", 0
	}
	return m[1], m[3], d
}

func seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// mergeLatency merges the inputs' histograms into one of the shared
// geometry; hdr's Merge is exact when geometries match, and recording into
// NewHistogram keeps the output geometry fixed whatever the inputs were.
func (o Options) mergeLatency(rs []*result.Result, what string, pick func(*result.Result) []result.Latency) (result.Latency, error) {
	h := result.NewHistogram()
	for i, r := range rs {
		for _, l := range pick(r) {
			lh, err := l.Histogram()
			if err != nil {
				return result.Latency{}, o.inputErr(i, fmt.Errorf("%s: %w", what, err))
			}
			if dropped := h.Merge(lh); dropped != 0 {
				return result.Latency{}, o.inputErr(i, fmt.Errorf("%s: %d values outside the histogram range", what, dropped))
			}
		}
	}
	return result.LatencyOf(h), nil
}

func (o Options) totals(rs []*result.Result) (result.Totals, error) {
	t := result.Totals{ByClass: map[string]int64{}}
	for _, r := range rs {
		t.Requests += r.Totals.Requests
		t.Successful += r.Totals.Successful
		t.Failed += r.Totals.Failed
		t.Iterations += r.Totals.Iterations
		addClasses(t.ByClass, r.Totals.ByClass)
	}
	var err error
	if t.LatencyOK, err = o.mergeLatency(rs, "totals latency_ok", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Totals.LatencyOK}
	}); err != nil {
		return t, err
	}
	t.LatencyAll, err = o.mergeLatency(rs, "totals latency_all", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Totals.LatencyAll}
	})
	return t, err
}

func addClasses(dst, src map[string]int64) {
	for c, n := range src {
		dst[c] += n
	}
}

// stepKey names a step across results: two unnamed steps of a scenario
// to the same URL share a name ("GET /items"), and the nth is matched
// with the nth, as a single process reports them apart.
type stepKey struct {
	scenario, name string
	nth            int
}

// steps matches steps by scenario, name and place among the steps of
// that name, keeping the order in which they first appear so a merged
// report reads like its inputs.
func (o Options) steps(rs []*result.Result) ([]result.Step, error) {
	var order []stepKey
	type acc struct {
		step    result.Step
		ok, all []result.Latency
		// msgs and others are the inputs' messages of the step; noMsgs
		// the failures of inputs written before steps kept messages.
		msgs     [][]result.StepError
		others   []map[string]int64
		noMsgs   map[string]int64
		withMsgs bool
	}
	byKey := map[stepKey]*acc{}
	for _, r := range rs {
		seen := map[stepKey]int{} // steps of each name so far, by nth 0
		for _, s := range r.Steps {
			named := stepKey{s.Scenario, s.Name, 0}
			k := stepKey{s.Scenario, s.Name, seen[named]}
			seen[named]++
			a := byKey[k]
			if a == nil {
				a = &acc{step: result.Step{Scenario: s.Scenario, Name: s.Name, Group: s.Group, ByClass: map[string]int64{}}}
				byKey[k] = a
				order = append(order, k)
			}
			if a.step.Group == "" {
				a.step.Group = s.Group
			}
			a.step.Requests += s.Requests
			a.step.Successful += s.Successful
			a.step.Failed += s.Failed
			addClasses(a.step.ByClass, s.ByClass)
			a.step.Statuses = result.AddCounts(a.step.Statuses, s.Statuses)
			if len(s.Errors) > 0 || len(s.OtherErrors) > 0 {
				a.withMsgs = true
				a.msgs = append(a.msgs, s.Errors)
				a.others = append(a.others, s.OtherErrors)
			} else if s.Failed > 0 {
				if a.noMsgs == nil {
					a.noMsgs = map[string]int64{}
				}
				addClasses(a.noMsgs, s.ByClass)
			}
		}
	}
	top := errorsTop(rs)
	out := make([]result.Step, 0, len(order))
	for _, k := range order {
		a := byKey[k]
		find := func(r *result.Result) (result.Step, bool) {
			nth := 0
			for _, s := range r.Steps {
				if s.Scenario == k.scenario && s.Name == k.name {
					if nth == k.nth {
						return s, true
					}
					nth++
				}
			}
			return result.Step{}, false
		}
		if a.withMsgs {
			// The top of the merge is chosen from every input's kept
			// messages; what is cut, and the failures of inputs that kept
			// no messages, count as other messages, so each class still
			// adds up.
			a.step.Errors, a.step.OtherErrors = result.CombineErrors(top, a.msgs, append(a.others, a.noMsgs))
		}
		what := fmt.Sprintf("step %q", k.name)
		var err error
		if a.step.LatencyOK, err = o.mergeLatency(rs, what+" latency_ok", func(r *result.Result) []result.Latency {
			if s, ok := find(r); ok {
				return []result.Latency{s.LatencyOK}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		if a.step.LatencyAll, err = o.mergeLatency(rs, what+" latency_all", func(r *result.Result) []result.Latency {
			if s, ok := find(r); ok {
				return []result.Latency{s.LatencyAll}
			}
			return nil
		}); err != nil {
			return nil, err
		}
		out = append(out, a.step)
	}
	return out, nil
}

func (o Options) generator(rs []*result.Result, requests int64) (result.Generator, error) {
	var g result.Generator
	// Core-seconds the inputs had: worker processes on one host share its
	// cores, so a host counts its cores once over the time its runs
	// covered (overlapping runs once); inputs with no host name count on
	// their own.
	type span struct{ from, to time.Time }
	cores := map[string]int{}
	spans := map[string][]span{}
	var order []string
	for i, r := range rs {
		rg := r.Generator
		g.CPUSeconds += rg.CPUSeconds
		g.MaxRSS = max(g.MaxRSS, rg.MaxRSS)
		g.GCPauseP99US = max(g.GCPauseP99US, rg.GCPauseP99US)
		host := rg.Host
		if host == "" {
			host = fmt.Sprintf("\x00input %d", i)
		}
		if _, ok := cores[host]; !ok {
			order = append(order, rg.Host)
		}
		cores[host] = max(cores[host], rg.Cores)
		spans[host] = append(spans[host], span{r.Run.Started, r.Run.Started.Add(seconds(r.Run.DurationS))})
	}
	var coreSeconds float64
	for host, c := range cores {
		g.Cores += c
		ss := spans[host]
		sort.Slice(ss, func(a, b int) bool { return ss[a].from.Before(ss[b].from) })
		var covered time.Duration
		var end time.Time
		for _, sp := range ss {
			from := sp.from
			if from.Before(end) {
				from = end
			}
			if sp.to.After(from) {
				covered += sp.to.Sub(from)
				end = sp.to
			}
		}
		coreSeconds += covered.Seconds() * float64(c)
	}
	if len(cores) == 1 {
		g.Host = order[0]
	}
	if requests > 0 {
		g.CPUPerRequestUS = g.CPUSeconds * 1e6 / float64(requests)
	}
	if coreSeconds > 0 {
		g.CPUUtil = g.CPUSeconds / coreSeconds
	}
	var err error
	g.Lag, err = o.mergeLatency(rs, "generator lag", func(r *result.Result) []result.Latency {
		return []result.Latency{r.Generator.Lag}
	})
	return g, err
}

// series lays every input's intervals on one wall-clock axis starting at
// start. An input's interval lands in the merged interval nearest to it;
// distributed segments start together, so the shift is at most half an
// interval.
func (o Options) series(rs []*result.Result, start time.Time) result.Series {
	interval := 0.0
	for _, r := range rs {
		if len(r.Series.T) > 0 {
			interval = r.Series.IntervalS
			break
		}
	}
	out := result.Series{IntervalS: interval, Failed: map[string][]int64{}}
	if interval <= 0 {
		out.IntervalS = rs[0].Series.IntervalS
		return out
	}
	type slot struct{ r, i, at int }
	var slots []slot
	n := 0
	for ri, r := range rs {
		off := r.Run.Started.Sub(start).Seconds()
		for i, t := range r.Series.T {
			at := int(math.Round((t + off) / interval))
			if at < 0 {
				at = 0
			}
			slots = append(slots, slot{ri, i, at})
			n = max(n, at+1)
		}
	}
	out.T = make([]float64, n)
	for i := range out.T {
		out.T[i] = float64(i) * interval
	}
	zeros := func() []int64 { return make([]int64, n) }
	out.Started, out.Completed, out.OK = zeros(), zeros(), zeros()
	out.P50US, out.P95US, out.P99US = zeros(), zeros(), zeros()
	out.Active, out.InFlight, out.Dropped, out.LagP99US = zeros(), zeros(), zeros(), zeros()
	out.Target = make([]float64, n)
	for _, r := range rs {
		if len(r.Series.Connections) > 0 {
			out.Connections = zeros()
			break
		}
	}
	for _, r := range rs {
		for c := range r.Series.Failed {
			if out.Failed[c] == nil {
				out.Failed[c] = zeros()
			}
		}
	}
	// Weighted sums for the percentile estimates, by interval.
	wsum := make([]float64, n)
	psum := [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}
	for _, s := range slots {
		in := rs[s.r].Series
		at := s.at
		get := func(col []int64) int64 {
			if s.i < len(col) {
				return col[s.i]
			}
			return 0
		}
		out.Started[at] += get(in.Started)
		out.Completed[at] += get(in.Completed)
		out.OK[at] += get(in.OK)
		out.Active[at] += get(in.Active)
		out.InFlight[at] += get(in.InFlight)
		out.Dropped[at] += get(in.Dropped)
		if out.Connections != nil {
			out.Connections[at] += get(in.Connections)
		}
		out.LagP99US[at] = max(out.LagP99US[at], get(in.LagP99US))
		if s.i < len(in.Target) {
			out.Target[at] += in.Target[s.i]
		}
		for c, col := range in.Failed {
			out.Failed[c][at] += get(col)
		}
		// The series percentiles are over successful requests, so the
		// interval's ok count is their weight; 0 means "no data".
		if w := float64(get(in.OK)); w > 0 && get(in.P50US) > 0 {
			wsum[at] += w
			for k, col := range [][]int64{in.P50US, in.P95US, in.P99US} {
				psum[k][at] += w * float64(get(col))
			}
		}
	}
	for at := range n {
		if wsum[at] == 0 {
			continue
		}
		out.P50US[at] = int64(math.Round(psum[0][at] / wsum[at]))
		out.P95US[at] = int64(math.Round(psum[1][at] / wsum[at]))
		out.P99US[at] = int64(math.Round(psum[2][at] / wsum[at]))
	}
	return out
}

// samples adds up error samples with the same step, class and message.
func samples(rs []*result.Result) []result.ErrorSample {
	type key struct{ step, class, msg string }
	idx := map[key]int{}
	var out []result.ErrorSample
	for _, r := range rs {
		for _, s := range r.Samples {
			k := key{s.Step, s.Class, s.Message}
			if i, ok := idx[k]; ok {
				out[i].Count += s.Count
				continue
			}
			idx[k] = len(out)
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}

// levels merges multi-level runs level by level; every input must have run
// the same levels, or the sums would mix different loads.
func (o Options) levels(rs []*result.Result) ([]result.Level, error) {
	first := rs[0].Levels
	for i, r := range rs {
		if len(r.Levels) != len(first) {
			return nil, o.inputErr(i, fmt.Errorf("%d levels, but %s has %d", len(r.Levels), o.name(0), len(first)))
		}
		for j, l := range r.Levels {
			if l.Vary != first[j].Vary || l.Value != first[j].Value {
				return nil, o.inputErr(i, fmt.Errorf("level %d is %s=%g, but %s's is %s=%g",
					j+1, l.Vary, l.Value, o.name(0), first[j].Vary, first[j].Value))
			}
			if l.Result == nil {
				return nil, o.inputErr(i, fmt.Errorf("level %d has no result", j+1))
			}
		}
	}
	if len(first) == 0 {
		return nil, nil
	}
	out := make([]result.Level, len(first))
	for j, l := range first {
		sub := Options{Force: o.Force, Names: make([]string, len(rs))}
		lrs := make([]*result.Result, len(rs))
		for i, r := range rs {
			lrs[i] = r.Levels[j].Result
			sub.Names[i] = fmt.Sprintf("%s level %d", o.name(i), j+1)
		}
		m, err := sub.Results(lrs)
		if err != nil {
			return nil, err
		}
		out[j] = result.Level{Vary: l.Vary, Value: l.Value, Result: m}
		for _, t := range l.SLO {
			out[j].SLO = append(out[j].SLO, result.Threshold{Expr: t.Expr})
		}
	}
	return out, nil
}

// errorsTop is how many messages a merged step keeps: the most any input
// kept, so a merge never shows less than its segments did.
func errorsTop(rs []*result.Result) int {
	top := 0
	for _, r := range rs {
		top = max(top, r.ErrorsTop)
	}
	if top == 0 {
		return result.DefaultErrorsTop
	}
	return top
}
