package levels

import (
	"fmt"
	"math"
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// Since returns what end recorded after before: end's figures less
// before's, where before is a snapshot of the same run taken earlier (the
// end of a level's ramp). Counts subtract, and histograms subtract bucket
// by bucket, which is exact because both come from one recorder with one
// geometry; so the level is judged on its steady part only, while its users
// and connections carry on from the ramp undisturbed. The steps of
// connection scenarios are the exception: they are kept whole, from the
// level's start, since their population's connects are what the ramp was
// for (a handshake SLO judges them), and they then agree with the
// Connections block, which covers the level from its start too; their
// session steps run to the level's end (sessionsToEnd).
func Since(end, before *result.Result) (*result.Result, error) {
	out := *end
	cutS := before.Run.DurationS
	out.Run.DurationS = end.Run.DurationS - cutS
	out.Run.Started = before.Run.Ended
	var err error
	if out.Totals, err = subTotals(end.Totals, before.Totals); err != nil {
		return nil, fmt.Errorf("totals: %w", err)
	}
	prev := map[string]result.Step{}
	for _, s := range before.Steps {
		prev[s.Scenario+"\x00"+s.Name] = s
	}
	conns := connectionScenarios(end)
	out.Steps = make([]result.Step, len(end.Steps))
	for i, s := range end.Steps {
		if conns[s.Scenario] {
			// A connection population comes into place during the ramp:
			// its connects, handshakes and joins are what the level did
			// to stand up, so they count from the level's start, as its
			// Connections block does.
			out.Steps[i] = s
			continue
		}
		b := prev[s.Scenario+"\x00"+s.Name]
		d := result.SinceErrors(s, b) // statuses and messages of the level alone
		d.Requests -= b.Requests
		d.Successful -= b.Successful
		d.Failed -= b.Failed
		d.ByClass = subClasses(s.ByClass, b.ByClass)
		if d.LatencyOK, err = subLatency(s.LatencyOK, b.LatencyOK); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		if d.LatencyAll, err = subLatency(s.LatencyAll, b.LatencyAll); err != nil {
			return nil, fmt.Errorf("step %q: %w", s.Name, err)
		}
		out.Steps[i] = d
	}
	out.Series = seriesFrom(end.Series, cutS)
	out.Monitors, out.MonitorProblems = monitorsFrom(end.Monitors, end.MonitorProblems, cutS)
	g := end.Generator
	if g.Lag, err = subLatency(end.Generator.Lag, before.Generator.Lag); err != nil {
		return nil, fmt.Errorf("generator lag: %w", err)
	}
	g.CPUSeconds = end.Generator.CPUSeconds - before.Generator.CPUSeconds
	if out.Totals.Requests > 0 {
		g.CPUPerRequestUS = g.CPUSeconds * 1e6 / float64(out.Totals.Requests)
	}
	if out.Run.DurationS > 0 && g.Cores > 0 {
		g.CPUUtil = g.CPUSeconds / (out.Run.DurationS * float64(g.Cores))
	}
	out.Generator = g
	out.Samples = subSamples(end.Samples, before.Samples, connectionSteps(end, conns))
	if err := out.Check(); err != nil {
		return nil, err
	}
	return &out, nil
}

func subTotals(a, b result.Totals) (result.Totals, error) {
	t := result.Totals{
		Requests: a.Requests - b.Requests, Successful: a.Successful - b.Successful, Failed: a.Failed - b.Failed,
		Iterations: a.Iterations - b.Iterations, ByClass: subClasses(a.ByClass, b.ByClass),
	}
	var err error
	if t.LatencyOK, err = subLatency(a.LatencyOK, b.LatencyOK); err != nil {
		return t, err
	}
	t.LatencyAll, err = subLatency(a.LatencyAll, b.LatencyAll)
	return t, err
}

func subClasses(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for c, n := range a {
		if d := n - b[c]; d != 0 {
			out[c] = d
		}
	}
	return out
}

func subLatency(a, b result.Latency) (result.Latency, error) {
	ha, err := a.Histogram()
	if err != nil {
		return result.Latency{}, err
	}
	hb, err := b.Histogram()
	if err != nil {
		return result.Latency{}, err
	}
	sa, sb := ha.Export(), hb.Export()
	if hb.TotalCount() > 0 {
		if sa.LowestTrackableValue != sb.LowestTrackableValue || sa.HighestTrackableValue != sb.HighestTrackableValue || sa.SignificantFigures != sb.SignificantFigures {
			return result.Latency{}, fmt.Errorf("histograms of different geometry cannot be subtracted")
		}
		for i, n := range sb.Counts {
			if i >= len(sa.Counts) || sa.Counts[i] < n {
				return result.Latency{}, fmt.Errorf("the earlier snapshot holds values the later one does not")
			}
			sa.Counts[i] -= n
		}
	}
	return result.LatencyOf(hdr.Import(sa)), nil
}

// seriesFrom keeps the intervals that start at or after cutS, on a clock
// that starts there: the interval the cut falls in belongs to the ramp.
func seriesFrom(s result.Series, cutS float64) result.Series {
	first := sort.Search(len(s.T), func(i int) bool { return s.T[i] >= cutS-1e-9 })
	// The cut is taken on a timer, a hair after the interval edge it aims
	// at; an interval starting within 5% of an interval of the cut still
	// counts as after it.
	if first > 0 && s.IntervalS > 0 && cutS-s.T[first-1] < 0.05*s.IntervalS {
		first--
	}
	shift := 0.0
	if first < len(s.T) {
		shift = s.T[first]
	}
	cut64 := func(v []int64) []int64 {
		if first >= len(v) {
			return []int64{}
		}
		return append([]int64(nil), v[first:]...)
	}
	out := result.Series{
		IntervalS: s.IntervalS, Started: cut64(s.Started), Completed: cut64(s.Completed), OK: cut64(s.OK),
		P50US: cut64(s.P50US), P95US: cut64(s.P95US), P99US: cut64(s.P99US), Active: cut64(s.Active),
		InFlight: cut64(s.InFlight), Dropped: cut64(s.Dropped), LagP99US: cut64(s.LagP99US),
		Failed: map[string][]int64{},
	}
	if len(s.Connections) > 0 {
		out.Connections = cut64(s.Connections)
	}
	for c, v := range s.Failed {
		out.Failed[c] = cut64(v)
	}
	for i := first; i < len(s.T); i++ {
		out.T = append(out.T, math.Round((s.T[i]-shift)*1e6)/1e6)
	}
	if first < len(s.Target) {
		out.Target = append([]float64(nil), s.Target[first:]...)
	}
	if out.T == nil {
		out.T = []float64{}
	}
	return out
}

// sessionsToEnd is end, the run as the level's hold ended, with the
// finished run ran's session steps (run.SessionStep) and their failure
// samples. A held connection's session is recorded as it ends, and the
// level's own stop closes the connections still held, after end was read:
// without these the level counted none of the sessions it ended, where a
// run counts those it ends. They are the same connections the level's
// connections block counts (open_at_end, disconnects), ended by the hold's
// end, not work started after it; and a session step is no HTTP step, so
// the totals and the rate the hold's end keeps to the hold are untouched.
// A session step is whole, the same in end and ran up to the hold's end,
// so taking ran's counts each session once.
func sessionsToEnd(end, ran *result.Result) *result.Result {
	if end == ran {
		return end
	}
	conns := connectionScenarios(ran)
	final := map[string]result.Step{}
	for _, s := range ran.Steps {
		if conns[s.Scenario] && s.Name == run.SessionStep {
			final[s.Scenario] = s
		}
	}
	if len(final) == 0 {
		return end
	}
	out := *end
	out.Steps = make([]result.Step, len(end.Steps))
	shared := false // an HTTP step of that name: the samples cannot tell them apart
	for i, s := range end.Steps {
		if f, ok := final[s.Scenario]; ok && s.Name == run.SessionStep {
			s = f
		} else if !conns[s.Scenario] && s.Name == run.SessionStep {
			shared = true
		}
		out.Steps[i] = s
	}
	if !shared {
		out.Samples = nil
		for _, e := range end.Samples {
			if e.Step != run.SessionStep {
				out.Samples = append(out.Samples, e)
			}
		}
		for _, e := range ran.Samples {
			if e.Step == run.SessionStep {
				out.Samples = append(out.Samples, e)
			}
		}
	}
	return &out
}

// connectionScenarios names the scenarios that hold connections: their
// steps cover a level from its start (Since).
func connectionScenarios(r *result.Result) map[string]bool {
	out := map[string]bool{}
	if r.Connections != nil {
		for _, c := range r.Connections.Scenarios {
			out[c.Scenario] = true
		}
	}
	return out
}

// connectionSteps names the steps of those scenarios, as failure samples
// name them.
func connectionSteps(r *result.Result, conns map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, s := range r.Steps {
		if conns[s.Scenario] {
			out[s.Name] = true
		}
	}
	return out
}

// subSamples keeps the samples recorded after b, and every sample of the
// whole steps (connection steps, counted from the level's start).
func subSamples(a, b []result.ErrorSample, whole map[string]bool) []result.ErrorSample {
	prev := map[[3]string]int64{}
	for _, s := range b {
		if !whole[s.Step] {
			prev[[3]string{s.Step, s.Class, s.Message}] = s.Count
		}
	}
	var out []result.ErrorSample
	for _, s := range a {
		s.Count -= prev[[3]string{s.Step, s.Class, s.Message}]
		if s.Count > 0 {
			out = append(out, s)
		}
	}
	return out
}

// seriesUntil keeps the intervals that start before endS.
func seriesUntil(s result.Series, endS float64) result.Series {
	n := sort.Search(len(s.T), func(i int) bool { return s.T[i] >= endS })
	cut64 := func(v []int64) []int64 {
		if n >= len(v) {
			return v
		}
		return v[:n]
	}
	out := s
	out.T = s.T[:n]
	out.Started, out.Completed, out.OK = cut64(s.Started), cut64(s.Completed), cut64(s.OK)
	out.P50US, out.P95US, out.P99US = cut64(s.P50US), cut64(s.P95US), cut64(s.P99US)
	out.Active, out.InFlight, out.Dropped, out.LagP99US = cut64(s.Active), cut64(s.InFlight), cut64(s.Dropped), cut64(s.LagP99US)
	out.Connections = cut64(s.Connections)
	if n < len(s.Target) {
		out.Target = s.Target[:n]
	}
	out.Failed = map[string][]int64{}
	for c, v := range s.Failed {
		out.Failed[c] = cut64(v)
	}
	return out
}

// monitorsFrom keeps the server samples taken at or after cutS, on the
// level's clock (Series'), so a level's server figures cover what its
// other figures cover and the levels join into one series (sequential).
func monitorsFrom(ms map[string]result.MonitorSeries, problems []result.MonitorProblem, cutS float64) (map[string]result.MonitorSeries, []result.MonitorProblem) {
	var out map[string]result.MonitorSeries
	for name, m := range ms {
		if out == nil {
			out = map[string]result.MonitorSeries{}
		}
		c := result.MonitorSeries{Unit: m.Unit, T: []float64{}, V: []float64{}}
		for i, t := range m.T {
			if t >= cutS && i < len(m.V) {
				c.T = append(c.T, math.Round((t-cutS)*1e6)/1e6)
				c.V = append(c.V, m.V[i])
			}
		}
		out[name] = c
	}
	var ps []result.MonitorProblem
	for _, p := range problems {
		// A monitor that could not start, or failed during the ramp, is
		// still the level's problem: it is kept, at the level's start.
		p.T = max(p.T-cutS, 0)
		if p.LastT > 0 {
			p.LastT = max(p.LastT-cutS, 0)
		}
		ps = append(ps, p)
	}
	return out, ps
}
