package report

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// Monitor charts are bounded so a plan with many monitors (or a Prometheus
// scrape selecting dozens of metrics) still gives a page one can read; the
// table lists every series regardless.
const (
	maxMonitorCharts      = 16
	maxSeriesPerChart     = 8
	monitorChartGroup     = "server"
	monitorTimeResolution = 1e6 // samples closer than 1µs are one moment
)

// connChart draws Series.Connections; nil without any.
func connChart(r *result.Result) *chart {
	s := r.Series
	if len(s.Connections) == 0 {
		return nil
	}
	n := len(s.T)
	c := &chart{ID: "connections", Title: "Open connections", X: "time", Xs: seriesT(s),
		Note:  "Persistent connections (WebSocket, SignalR) open at the end of each interval.",
		Axes:  []axis{{Label: "connections", Unit: ""}},
		Lines: []series{{Label: "open", Color: "conn", Width: 2, V: counts(s.Connections, n)}}}
	var target int64
	if r.Connections != nil {
		for _, sc := range r.Connections.Scenarios {
			target += int64(sc.Target)
		}
	}
	if target > 0 {
		c.Note = "Persistent connections (WebSocket, SignalR) open at the end of each interval, against the connections planned at the peak."
		flat := make(nums, n)
		for i := range flat {
			flat[i] = float64(target)
		}
		c.Lines = append(c.Lines, series{Label: "planned at peak", Color: "target", Dash: dashed, V: flat})
	}
	return c
}

// monitorUnits orders a monitor's charts and names their axes; a unit not
// listed (a scraped Prometheus metric's) comes last and reads as "value".
var monitorUnits = []struct{ unit, axisUnit, word string }{
	{"pct", "%", "percent"},
	{"ratio", "ratio", "ratio"},
	{"count", "", "count"},
	{"1/s", "/s", "per second"},
	{"bytes", "B", "bytes"},
	{"bytes/s", "B/s", "bytes per second"},
	{"s", "s", "seconds"},
}

func unitRank(unit string) (rank int, axisUnit, word string) {
	for i, u := range monitorUnits {
		if u.unit == unit {
			return i, u.axisUnit, u.word
		}
	}
	if unit == "" {
		return len(monitorUnits), "", "value"
	}
	return len(monitorUnits), "", unit
}

type monSeries struct {
	metric string
	s      result.MonitorSeries
	peak   float64
}

var idUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// monGroup is the series of one monitor in one unit: one chart.
type monGroup struct{ label, unit string }

// monitorCharts draws the server series: one chart per monitor and unit,
// so a chart's lines share an axis that means something, and the charts of
// one monitor sit together. Series at zero throughout (most TCP states on
// a quiet host) are left out, as the table leaves them out. It also
// returns the series the caps left out, for the page to say.
func monitorCharts(r *result.Result) (charts []chart, left []string) {
	groups := monitorGroups(r)
	ids := map[string]bool{}
	for _, k := range sortedGroups(groups) {
		ms := groups[k]
		if len(charts) == maxMonitorCharts {
			for _, m := range ms {
				left = append(left, monitorKeyName(k.label, m.metric))
			}
			continue
		}
		ms, dropped := largestSeries(ms)
		for _, m := range dropped {
			left = append(left, monitorKeyName(k.label, m))
		}
		charts = append(charts, monitorChart(k, ms, dropped, ids))
	}
	sort.Strings(left)
	return charts, left
}

// monitorGroups sorts the server series that ever left zero by monitor
// and unit; the generator's own monitor is charted elsewhere.
func monitorGroups(r *result.Result) map[monGroup][]monSeries {
	groups := map[monGroup][]monSeries{}
	for k, s := range r.Monitors {
		label, metric := result.SplitMonitorKey(k)
		if label == selfLabel {
			continue
		}
		peak, any := 0.0, false
		for _, v := range s.V {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				peak, any = max(peak, math.Abs(v)), true
			}
		}
		if !any || peak == 0 {
			continue
		}
		if metric == "" {
			metric = label
		}
		g := monGroup{label, s.Unit}
		groups[g] = append(groups[g], monSeries{metric, s, peak})
	}
	return groups
}

// sortedGroups orders the groups by monitor, then by unit as monitorUnits
// ranks them.
func sortedGroups(groups map[monGroup][]monSeries) []monGroup {
	keys := make([]monGroup, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].label != keys[j].label {
			return keys[i].label < keys[j].label
		}
		ri, _, _ := unitRank(keys[i].unit)
		rj, _, _ := unitRank(keys[j].unit)
		if ri != rj {
			return ri < rj
		}
		return keys[i].unit < keys[j].unit
	})
	return keys
}

// largestSeries keeps the maxSeriesPerChart largest series, by name; the
// largest are the ones worth a line when there are too many, and the rest
// (dropped, by name) keep their place in the table.
func largestSeries(ms []monSeries) (kept []monSeries, dropped []string) {
	sort.Slice(ms, func(i, j int) bool {
		if ms[i].peak != ms[j].peak {
			return ms[i].peak > ms[j].peak
		}
		return ms[i].metric < ms[j].metric
	})
	if len(ms) > maxSeriesPerChart {
		for _, m := range ms[maxSeriesPerChart:] {
			dropped = append(dropped, m.metric)
		}
		ms = ms[:maxSeriesPerChart]
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].metric < ms[j].metric })
	return ms, dropped
}

// monitorChart is group k's chart, with an id unique among ids.
func monitorChart(k monGroup, ms []monSeries, dropped []string, ids map[string]bool) chart {
	_, axisUnit, word := unitRank(k.unit)
	id := "mon-" + strings.Trim(idUnsafe.ReplaceAllString(strings.ToLower(k.label+"-"+word), "-"), "-")
	for base, i := id, 2; ids[id]; i++ {
		id = fmt.Sprintf("%s-%d", base, i)
	}
	ids[id] = true
	title := k.label + ": " + word
	if len(ms) == 1 && len(dropped) == 0 {
		title = k.label + ": " + ms[0].metric
	}
	c := chart{ID: id, Group: monitorChartGroup, Title: title, X: "time",
		Axes: []axis{{Label: word, Unit: axisUnit}}}
	c.Xs, c.Lines = alignMonitorSeries(ms)
	note := "Sampled by the " + k.label + " monitor on the run clock (0 is the load's start)."
	if len(dropped) > 0 {
		note += fmt.Sprintf(" %d smaller series not drawn (see the table): %s.", len(dropped), strings.Join(dropped, ", "))
	}
	c.Note = note
	return c
}

func monitorKeyName(label, metric string) string {
	if metric == label {
		return label
	}
	return label + "." + metric
}

// alignMonitorSeries puts one monitor's series on the union of their
// sample times, which uPlot needs. Series of one monitor are sampled on
// the same ticks, so the union adds little: a rate has no value at the
// first tick (it needs two samples), which stays a gap.
func alignMonitorSeries(ms []monSeries) (nums, []series) {
	at := map[int64]int{}
	var ticks []int64
	key := func(t float64) int64 { return int64(math.Round(t * monitorTimeResolution)) }
	for _, m := range ms {
		for _, t := range m.s.T {
			k := key(t)
			if _, ok := at[k]; !ok {
				at[k] = 0
				ticks = append(ticks, k)
			}
		}
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i] < ticks[j] })
	xs := make(nums, len(ticks))
	for i, k := range ticks {
		at[k] = i
		xs[i] = float64(k) / monitorTimeResolution
	}
	lines := make([]series, len(ms))
	for i, m := range ms {
		v := make(nums, len(xs))
		for j := range v {
			v[j] = math.NaN()
		}
		for j, t := range m.s.T {
			if j < len(m.s.V) {
				v[at[key(t)]] = m.s.V[j]
			}
		}
		lines[i] = series{Label: m.metric, Color: runColor(i), Width: 1.5, V: v}
	}
	return xs, lines
}

// shareTimeAxis gives every time chart the span of all of them when they
// differ (monitors sample before the load starts and after it ends), so
// one moment sits at the same place on every chart. Charts that already
// agree, as every chart of a run without monitors does, are left alone.
func shareTimeAxis(charts []chart) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range charts {
		if c.X != "time" || len(c.Xs) == 0 {
			continue
		}
		lo, hi = min(lo, c.Xs[0]), max(hi, c.Xs[len(c.Xs)-1])
	}
	if math.IsInf(lo, 0) {
		return
	}
	same := true
	for _, c := range charts {
		if c.X == "time" && len(c.Xs) > 0 && (c.Xs[0] != lo || c.Xs[len(c.Xs)-1] != hi) {
			same = false
		}
	}
	if same {
		return
	}
	for i := range charts {
		if charts[i].X == "time" && len(charts[i].Xs) > 0 {
			charts[i].XRange = nums{lo, hi}
		}
	}
}
