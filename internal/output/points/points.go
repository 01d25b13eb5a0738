// Package points turns a run's cumulative result into the metrics the
// streaming outputs send (Prometheus remote write, OTLP): one list, so
// both outputs carry the same names, labels and values.
package points

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Kind is how a metric adds up over time.
type Kind uint8

const (
	// Counter is cumulative since the run's start.
	Counter Kind = iota
	// Gauge is the value now.
	Gauge
	// Histogram is cumulative since the run's start.
	Histogram
)

// Metric describes one metric. Prom and OTel are its names in those two
// worlds: Prometheus wants _total and _seconds suffixes, OpenTelemetry
// dotted names and a unit.
type Metric struct {
	Prom, OTel, Unit, Help string
	Kind                   Kind
}

// The metrics, as docs/reference/outputs.md documents them.
var (
	Requests = Metric{"stampede_requests_total", "stampede.requests", "{request}", "requests completed, successful or not, by scenario and step", Counter}
	Failures = Metric{"stampede_failures_total", "stampede.failures", "{request}", "failed requests by scenario, step and failure class", Counter}
	Duration = Metric{"stampede_request_duration_seconds", "stampede.request.duration", "s", "latency of successful requests by scenario and step", Histogram}
	Active   = Metric{"stampede_active_users", "stampede.active_users", "{user}", "virtual users running (closed model) or iterations in progress (open model)", Gauge}
	InFlight = Metric{"stampede_in_flight", "stampede.in_flight", "{request}", "requests sent and not yet answered", Gauge}
	Dropped  = Metric{"stampede_dropped_total", "stampede.dropped", "{iteration}", "arrivals that found no free slot or started too late (open model)", Counter}
	Conns    = Metric{"stampede_connections", "stampede.connections", "{connection}", "persistent (WebSocket, SignalR) connections open", Gauge}
	Lag      = Metric{"stampede_generator_lag_p99_seconds", "stampede.generator.lag_p99", "s", "p99 of actual minus intended start over the last interval: the generator's own delay", Gauge}
	// Target's unit is an annotation, not "1": OpenTelemetry-to-Prometheus
	// translators name a gauge of unit "1" a ratio (stampede_target_ratio).
	Target = Metric{"stampede_target", "stampede.target", "{target}", "the planned users (closed model) or arrivals/s (open model) now", Gauge}
	// Quantile is the run's exact latency percentiles, from its HDR
	// histograms: the figures of the report, which buckets can only
	// approximate.
	Quantile  = Metric{"stampede_request_duration_quantile_seconds", "stampede.request.duration.quantile", "s", "exact latency percentiles of successful requests since the run's start, by scenario, step and quantile", Gauge}
	All       = []Metric{Requests, Failures, Duration, Quantile, Active, InFlight, Dropped, Conns, Lag, Target}
	BoundsSec = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Label is a name and value.
type Label struct{ Name, Value string }

// Run is what sets one writer's series apart from every other's on a
// shared receiver: the run's id (the same for every segment of a run),
// the segment ("0/4"; "all" for a process that streams the whole test),
// and the user's own labels.
type Run struct {
	TestID, Segment string
	Labels          []Label
}

// labels are the run's labels, on every point.
func (r Run) labels() []Label {
	ls := make([]Label, 0, len(r.Labels)+2)
	if r.TestID != "" {
		ls = append(ls, Label{"testid", r.TestID})
	}
	if r.Segment != "" {
		ls = append(ls, Label{"segment", r.Segment})
	}
	return append(ls, r.Labels...)
}

// Point is one value of one metric at one time.
type Point struct {
	Metric Metric
	Labels []Label
	Value  float64
	// Histograms: Counts[i] is the number at or below BoundsSec[i] and
	// above the bound before; the last entry is above the last bound.
	Counts []uint64
	Sum    float64
	Count  uint64
}

// Batch is what one snapshot of the run sends.
type Batch struct {
	Start, Time time.Time
	Points      []Point
}

// From builds the points of a cumulative result as of now. The plan
// label tells runs of different plans apart on one dashboard. step_index,
// the step's place in the result's steps list, keeps steps that share a
// name (unnamed steps to one path) apart: with the same labels a receiver
// would keep one of their samples and drop the other.
func From(r *result.Result, now time.Time, run Run) Batch {
	b := Batch{Start: r.Run.Started, Time: now}
	if b.Start.IsZero() || b.Start.After(now) {
		b.Start = now
	}
	plan := append([]Label{{"plan", r.Plan.Name}}, run.labels()...)
	for i, st := range r.Steps {
		b.Points = append(b.Points, stepPoints(st, i, plan)...)
	}
	b.Points = append(b.Points, seriesPoints(r.Series, plan)...)
	return b
}

// quantiles are the percentiles Quantile publishes.
var quantiles = []struct {
	label string
	us    func(result.Latency) int64
}{
	{"0.5", func(l result.Latency) int64 { return l.P50US }},
	{"0.9", func(l result.Latency) int64 { return l.P90US }},
	{"0.95", func(l result.Latency) int64 { return l.P95US }},
	{"0.99", func(l result.Latency) int64 { return l.P99US }},
	{"0.999", func(l result.Latency) int64 { return l.P999US }},
}

// stepPoints are one step's counters, histogram and percentiles.
func stepPoints(st result.Step, i int, run []Label) []Point {
	base := append([]Label{{"scenario", st.Scenario}, {"step", st.Name}, {"step_index", strconv.Itoa(i)}}, run...)
	ps := []Point{{Metric: Requests, Labels: base, Value: float64(st.Requests)}}
	classes := make([]string, 0, len(st.ByClass))
	for c, n := range st.ByClass {
		if n > 0 {
			classes = append(classes, c)
		}
	}
	sort.Strings(classes)
	for _, c := range classes {
		l := append([]Label{{"class", c}}, base...)
		ps = append(ps, Point{Metric: Failures, Labels: l, Value: float64(st.ByClass[c])})
	}
	if p, ok := histogram(st.LatencyOK); ok {
		p.Labels = base
		ps = append(ps, p)
	}
	if st.LatencyOK.Count > 0 {
		for _, q := range quantiles {
			l := append([]Label{{"quantile", q.label}}, base...)
			ps = append(ps, Point{Metric: Quantile, Labels: l, Value: float64(q.us(st.LatencyOK)) / 1e6})
		}
	}
	return ps
}

// seriesPoints are the run's gauges, as of its last interval, and the
// arrivals it dropped.
func seriesPoints(s result.Series, one []Label) []Point {
	var ps []Point
	last := func(v []int64) (float64, bool) {
		if len(v) == 0 {
			return 0, false
		}
		return float64(v[len(v)-1]), true
	}
	if v, ok := last(s.Active); ok {
		ps = append(ps, Point{Metric: Active, Labels: one, Value: v})
	}
	if v, ok := last(s.InFlight); ok {
		ps = append(ps, Point{Metric: InFlight, Labels: one, Value: v})
	}
	// Always sent, 0 in a run without persistent connections: a panel
	// of them shows none open rather than no data.
	conns, _ := last(s.Connections)
	ps = append(ps, Point{Metric: Conns, Labels: one, Value: conns})
	if v, ok := last(s.LagP99US); ok {
		ps = append(ps, Point{Metric: Lag, Labels: one, Value: v / 1e6})
	}
	if len(s.Target) > 0 {
		ps = append(ps, Point{Metric: Target, Labels: one, Value: s.Target[len(s.Target)-1]})
	}
	var dropped int64
	for _, d := range s.Dropped {
		dropped += d
	}
	return append(ps, Point{Metric: Dropped, Labels: one, Value: float64(dropped)})
}

// histogram puts an HDR histogram's counts into BoundsSec's buckets.
func histogram(l result.Latency) (Point, bool) {
	h, err := l.Histogram()
	if err != nil {
		return Point{}, false
	}
	p := Point{Metric: Duration, Counts: make([]uint64, len(BoundsSec)+1), Count: uint64(l.Count), Sum: l.AvgUS * float64(l.Count) / 1e6}
	if l.Count == 0 {
		return p, true
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// A bar holds values equal to 3 significant digits; its lowest
		// keeps a value recorded exactly at a bound (100ms) at or below
		// that bound, as le means.
		v := float64(bar.From) / 1e6
		i := sort.SearchFloat64s(BoundsSec, v)
		p.Counts[i] += uint64(bar.Count)
	}
	return p, true
}

// reserved are the labels stampede sets itself; a user label of one of
// these names would overwrite it or make two series one.
var reserved = map[string]bool{"plan": true, "scenario": true, "step": true, "step_index": true, "class": true,
	"le": true, "quantile": true, "testid": true, "segment": true}

// ParseLabel reads a user's label, NAME=VALUE, with NAME a Prometheus
// label name that stampede does not set itself.
func ParseLabel(s string) (Label, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || value == "" {
		return Label{}, fmt.Errorf("label %q: expected NAME=VALUE, e.g. env=staging", s)
	}
	if !validName(name) || strings.HasPrefix(name, "__") {
		return Label{}, fmt.Errorf("label %q: %q is not a Prometheus label name (letters, digits and _, not starting with a digit or __)", s, name)
	}
	if reserved[name] {
		return Label{}, fmt.Errorf("label %q: stampede sets %s itself", s, name)
	}
	return Label{name, value}, nil
}

func validName(s string) bool {
	for i, c := range s {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}
