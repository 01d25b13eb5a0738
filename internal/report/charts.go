package report

import (
	"encoding/json"
	"math"
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

// chart is what the page's script draws with uPlot. Charts are built from
// the per-interval series and the histograms, never from raw samples, so a
// report's size depends on the run's length, not its request count.
type chart struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Note  string `json:"note,omitempty"`
	X     string `json:"x"` // "time" (seconds since start) or "nines" (percentile curve)
	Xs    nums   `json:"xs"`
	// XRange widens a time chart's x axis to the span every time chart
	// covers (shareTimeAxis); absent when they all agree.
	XRange nums `json:"xrange,omitempty"`
	// Group names the page section the chart sits in ("server"); absent,
	// the main chart grid.
	Group string   `json:"group,omitempty"`
	Axes  []axis   `json:"axes"`
	Lines []series `json:"series"`
}

// MarshalJSON writes an empty chart's series as [] rather than null, so
// the page's script need not guard every list.
func (c chart) MarshalJSON() ([]byte, error) {
	type plain chart
	if c.Lines == nil {
		c.Lines = []series{}
	}
	if c.Xs == nil {
		c.Xs = nums{}
	}
	return json.Marshal(plain(c))
}

type axis struct {
	Label string `json:"label"`
	Unit  string `json:"unit"` // "ms", "/s" or "" — decides tick and hover formatting
	Log   bool   `json:"log,omitempty"`
}

type series struct {
	Label string `json:"label"`
	// Color names a CSS custom property (--c-NAME) so the page's light and
	// dark themes pick the actual colour.
	Color string  `json:"color"`
	Dash  []int   `json:"dash,omitempty"`
	Width float64 `json:"width,omitempty"`
	Axis  int     `json:"axis,omitempty"`
	Hide  bool    `json:"hide,omitempty"`
	V     nums    `json:"v"`
}

// nums marshals NaN as null (a gap in the line) and keeps numbers short.
type nums []float64

func (n nums) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(n)*6+2)
	b = append(b, '[')
	for i, v := range n {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// failColors are given to failure classes in report order.
var failColors = []string{"f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7"}

// stepColors leave out green, which the distribution's "all steps" line
// would otherwise share with a step in the light theme's palette.
var stepColors = []string{"r0", "r1", "r3", "r4", "r5", "r6", "r7"}

func runColor(i int) string { return "r" + strconv.Itoa(i%8) }

var (
	dashed = []int{6, 4}
	dotted = []int{2, 3}
)

// seriesT is the x axis of the time charts: seconds since the run started.
func seriesT(s result.Series) nums { return nums(append([]float64(nil), s.T...)) }

// perSecond turns per-interval counts into rates.
func perSecond(col []int64, n int, interval float64) nums {
	if interval <= 0 {
		interval = 1
	}
	out := make(nums, n)
	for i := range out {
		if i < len(col) {
			out[i] = float64(col[i]) / interval
		}
	}
	return out
}

func counts(col []int64, n int) nums {
	out := make(nums, n)
	for i := range out {
		if i < len(col) {
			out[i] = float64(col[i])
		}
	}
	return out
}

// millis converts microsecond latencies; 0 means "no request finished in
// this interval" and becomes a gap rather than a misleading zero.
func millis(col []int64, n int) nums {
	out := make(nums, n)
	for i := range out {
		out[i] = math.NaN()
		if i < len(col) && col[i] > 0 {
			out[i] = float64(col[i]) / 1000
		}
	}
	return out
}

func floats(col []float64, n int) nums {
	out := make(nums, n)
	for i := range out {
		if i < len(col) {
			out[i] = col[i]
		}
	}
	return out
}

func sumFailed(s result.Series, n int) []int64 {
	out := make([]int64, n)
	for _, col := range s.Failed {
		for i := 0; i < n && i < len(col); i++ {
			out[i] += col[i]
		}
	}
	return out
}

// runCharts are the charts of a single run's report.
func runCharts(r *result.Result, steps []result.Step) ([]chart, error) {
	s := r.Series
	n := len(s.T)
	xs := seriesT(s)
	open := r.Run.Model == "open"

	rps := chart{ID: "rps", Title: "Requests per second", X: "time", Xs: xs,
		Note: "Completed requests per second: successful, and failed by class.",
		Axes: []axis{{Label: "requests/s", Unit: "/s"}}}
	rps.Lines = append(rps.Lines, series{Label: "successful", Color: "ok", Width: 2, V: perSecond(s.OK, n, s.IntervalS)})
	for i, c := range presentClasses(failedTotals(s)) {
		rps.Lines = append(rps.Lines, series{Label: classTitle(c), Color: failColors[i%len(failColors)], Width: 2, V: perSecond(s.Failed[c], n, s.IntervalS)})
	}
	if open {
		rps.Note = "Completed requests per second, successful and failed by class, against the planned arrival rate."
		rps.Lines = append(rps.Lines,
			series{Label: "arrivals started", Color: "muted", V: perSecond(s.Started, n, s.IntervalS), Hide: true},
			series{Label: "target arrivals/s", Color: "target", Dash: dashed, V: floats(s.Target, n)})
	}

	lat := chart{ID: "latency", Title: "Latency over time (successful requests)", X: "time", Xs: xs,
		Note: "Percentiles of each interval's successful requests; gaps are intervals where none completed.",
		Axes: []axis{{Label: "latency", Unit: "ms"}},
		Lines: []series{
			{Label: "p50", Color: "p50", Width: 2, V: millis(s.P50US, n)},
			{Label: "p95", Color: "p95", Width: 2, V: millis(s.P95US, n)},
			{Label: "p99", Color: "p99", Width: 2, V: millis(s.P99US, n)},
		}}

	users := chart{ID: "users", Title: "Users and requests in flight", X: "time", Xs: xs,
		Note: "Active virtual users (or iterations running, open model) and requests awaiting a response.",
		Axes: []axis{{Label: "count", Unit: ""}},
		Lines: []series{
			{Label: "active", Color: "active", Width: 2, V: counts(s.Active, n)},
			{Label: "in flight", Color: "inflight", Width: 2, V: counts(s.InFlight, n)},
		}}
	if !open {
		users.Lines = append(users.Lines, series{Label: "target users", Color: "target", Dash: dashed, V: floats(s.Target, n)})
	}

	gen := chart{ID: "generator", Title: "Dropped arrivals and generator lag", X: "time", Xs: xs,
		Note: "Arrivals dropped because max_in_flight was reached, and the p99 of how late the generator started iterations (over 1ms makes the run's figures suspect).",
		Axes: []axis{{Label: "dropped/s", Unit: "/s"}, {Label: "lag p99", Unit: "ms"}},
		Lines: []series{
			{Label: "dropped/s", Color: "f0", Width: 2, V: perSecond(s.Dropped, n, s.IntervalS)},
			{Label: "lag p99", Color: "lag", Width: 2, Axis: 1, V: lagMillis(s.LagP99US, n)},
		}}

	dist := chart{ID: "distribution", Title: "Latency distribution (successful requests)", X: "nines", Xs: ninesAxis(),
		Note: "Latency at each percentile, from the HDR histograms; the axis stretches the tail (90%, 99%, 99.9% …) so rare slow requests are visible.",
		Axes: []axis{{Label: "latency", Unit: "ms", Log: true}}}
	h, err := r.Totals.LatencyOK.Histogram()
	if err != nil {
		return nil, err
	}
	if h.TotalCount() > 0 {
		dist.Lines = append(dist.Lines, series{Label: "all steps", Color: "all", Width: 2.5, V: percentileCurve(h)})
	}
	names := stepNames(steps)
	for i, st := range steps {
		sh, err := st.LatencyOK.Histogram()
		if err != nil {
			return nil, err
		}
		if sh.TotalCount() == 0 || len(steps) == 1 {
			continue
		}
		dist.Lines = append(dist.Lines, series{Label: names[i], Color: stepColors[i%len(stepColors)], Width: 1.5, Dash: dashed, V: percentileCurve(sh)})
	}
	if len(dist.Lines) == 0 {
		dist.Note = "No successful requests, so there is no latency distribution."
	}
	out := []chart{rps, lat, users, gen}
	if c := connChart(r); c != nil {
		out = append(out, *c)
	}
	return append(out, dist), nil
}

// lagMillis keeps zero lag as zero: unlike latency, no lag is a value.
func lagMillis(col []int64, n int) nums {
	out := make(nums, n)
	for i := range out {
		if i < len(col) {
			out[i] = float64(col[i]) / 1000
		}
	}
	return out
}

func failedTotals(s result.Series) map[string]int64 {
	out := map[string]int64{}
	for c, col := range s.Failed {
		for _, v := range col {
			out[c] += v
		}
	}
	return out
}

// The percentile curve's x axis is "nines": x = −log10(1 − p/100), so
// 90% is at 1, 99% at 2, 99.9% at 3 … up to 99.999% at 5.
const (
	maxNines  = 5.0
	ninesStep = 0.025
)

func ninesAxis() nums {
	var xs nums
	for i := 0; float64(i)*ninesStep <= maxNines+1e-9; i++ {
		xs = append(xs, math.Round(float64(i)*ninesStep*1000)/1000)
	}
	return xs
}

func percentileCurve(h *hdr.Histogram) nums {
	xs := ninesAxis()
	ps := make([]float64, len(xs))
	for i, x := range xs {
		ps[i] = 100 * (1 - math.Pow(10, -x))
	}
	vs := h.ValueAtPercentilesSlice(ps)
	out := make(nums, len(vs))
	for i, v := range vs {
		out[i] = float64(v) / 1000
	}
	// Below the first percentile step the curve starts at the minimum.
	if len(out) > 0 {
		out[0] = float64(h.Min()) / 1000
	}
	return out
}

// compareCharts overlay the runs on one time axis: seconds since each
// run's own start, as before/after figures of a fix are drawn.
func compareCharts(c *Comparison) ([]chart, error) {
	n := 0
	interval := 1.0
	for _, r := range c.Runs {
		n = max(n, len(r.Series.T))
		if r.Series.IntervalS > 0 {
			interval = r.Series.IntervalS
		}
	}
	xs := make(nums, n)
	for i := range xs {
		xs[i] = float64(i) * interval
	}
	// Runs are laid on the shared axis by their own t, so runs with
	// different intervals still line up in seconds.
	onAxis := func(r *result.Result, v nums) nums {
		out := make(nums, n)
		for i := range out {
			out[i] = math.NaN()
		}
		for i, t := range r.Series.T {
			at := int(math.Round(t / interval))
			if at >= 0 && at < n && i < len(v) {
				out[at] = v[i]
			}
		}
		return out
	}
	ok := chart{ID: "cmp-ok", Title: "Successful requests per second", X: "time", Xs: xs,
		Note: "Seconds since each run's start.", Axes: []axis{{Label: "requests/s", Unit: "/s"}}}
	failed := chart{ID: "cmp-failed", Title: "Failed requests per second", X: "time", Xs: xs,
		Note: "All failure classes together.", Axes: []axis{{Label: "requests/s", Unit: "/s"}}}
	lat := chart{ID: "cmp-latency", Title: "Latency over time (successful requests)", X: "time", Xs: xs,
		Note: "p95 solid, p99 dashed, p50 dotted (hidden at first: click its legend entry).", Axes: []axis{{Label: "latency", Unit: "ms"}}}
	users := chart{ID: "cmp-users", Title: "Active users", X: "time", Xs: xs,
		Note: "Active virtual users (closed model) or iterations running (open model); in flight dashed.", Axes: []axis{{Label: "count"}}}
	dist := chart{ID: "cmp-distribution", Title: "Latency distribution (successful requests)", X: "nines", Xs: ninesAxis(),
		Note: "Latency at each percentile, from each run's HDR histogram.", Axes: []axis{{Label: "latency", Unit: "ms", Log: true}}}
	conns := chart{ID: "cmp-connections", Title: "Open connections", X: "time", Xs: xs,
		Note: "Persistent connections (WebSocket, SignalR) open at the end of each interval.", Axes: []axis{{Label: "connections"}}}
	hs, err := c.okHistograms()
	if err != nil {
		return nil, err
	}
	for i, r := range c.Runs {
		s := r.Series
		m := len(s.T)
		col, label := runColor(i), c.Labels[i]
		ok.Lines = append(ok.Lines, series{Label: label, Color: col, Width: 2, V: onAxis(r, perSecond(s.OK, m, s.IntervalS))})
		failed.Lines = append(failed.Lines, series{Label: label, Color: col, Width: 2, V: onAxis(r, perSecond(sumFailed(s, m), m, s.IntervalS))})
		lat.Lines = append(lat.Lines,
			series{Label: label + " p95", Color: col, Width: 2, V: onAxis(r, millis(s.P95US, m))},
			series{Label: label + " p99", Color: col, Width: 1.5, Dash: dashed, V: onAxis(r, millis(s.P99US, m))},
			series{Label: label + " p50", Color: col, Width: 1.5, Dash: dotted, Hide: true, V: onAxis(r, millis(s.P50US, m))})
		users.Lines = append(users.Lines,
			series{Label: label + " active", Color: col, Width: 2, V: onAxis(r, counts(s.Active, m))},
			series{Label: label + " in flight", Color: col, Width: 1.5, Dash: dashed, V: onAxis(r, counts(s.InFlight, m))})
		if len(s.Connections) > 0 {
			conns.Lines = append(conns.Lines, series{Label: label, Color: col, Width: 2, V: onAxis(r, counts(s.Connections, m))})
		}
		if hs[i].TotalCount() > 0 {
			dist.Lines = append(dist.Lines, series{Label: label, Color: col, Width: 2, V: percentileCurve(hs[i])})
		}
	}
	out := []chart{ok, failed, lat, users}
	// Only runs with persistent connections have the series; a comparison
	// of plain HTTP runs keeps its charts as they were.
	if len(conns.Lines) > 0 {
		out = append(out, conns)
	}
	return append(out, dist), nil
}
