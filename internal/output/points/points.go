// Package points turns a run's cumulative result into the metrics the
// streaming outputs send (Prometheus remote write, OTLP): one list, so
// both outputs carry the same names, labels and values.
package points

import (
	"sort"
	"strconv"
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
	Requests  = Metric{"stampede_requests_total", "stampede.requests", "{request}", "requests completed, successful or not, by scenario and step", Counter}
	Failures  = Metric{"stampede_failures_total", "stampede.failures", "{request}", "failed requests by scenario, step and failure class", Counter}
	Duration  = Metric{"stampede_request_duration_seconds", "stampede.request.duration", "s", "latency of successful requests by scenario and step", Histogram}
	Active    = Metric{"stampede_active_users", "stampede.active_users", "{user}", "virtual users running (closed model) or iterations in progress (open model)", Gauge}
	InFlight  = Metric{"stampede_in_flight", "stampede.in_flight", "{request}", "requests sent and not yet answered", Gauge}
	Dropped   = Metric{"stampede_dropped_total", "stampede.dropped", "{iteration}", "arrivals that found no free slot or started too late (open model)", Counter}
	Conns     = Metric{"stampede_connections", "stampede.connections", "{connection}", "persistent (WebSocket, SignalR) connections open", Gauge}
	Lag       = Metric{"stampede_generator_lag_p99_seconds", "stampede.generator.lag_p99", "s", "p99 of actual minus intended start over the last interval: the generator's own delay", Gauge}
	Target    = Metric{"stampede_target", "stampede.target", "1", "the planned users (closed model) or arrivals/s (open model) now", Gauge}
	All       = []Metric{Requests, Failures, Duration, Active, InFlight, Dropped, Conns, Lag, Target}
	BoundsSec = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Label is a name and value; a point's labels are sorted by name.
type Label struct{ Name, Value string }

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
func From(r *result.Result, now time.Time) Batch {
	b := Batch{Start: r.Run.Started, Time: now}
	if b.Start.IsZero() || b.Start.After(now) {
		b.Start = now
	}
	plan := Label{"plan", r.Plan.Name}
	for i, st := range r.Steps {
		idx := Label{"step_index", strconv.Itoa(i)}
		base := []Label{plan, {"scenario", st.Scenario}, {"step", st.Name}, idx}
		b.Points = append(b.Points, Point{Metric: Requests, Labels: base, Value: float64(st.Requests)})
		classes := make([]string, 0, len(st.ByClass))
		for c, n := range st.ByClass {
			if n > 0 {
				classes = append(classes, c)
			}
		}
		sort.Strings(classes)
		for _, c := range classes {
			l := []Label{{"class", c}, plan, {"scenario", st.Scenario}, {"step", st.Name}, idx}
			b.Points = append(b.Points, Point{Metric: Failures, Labels: l, Value: float64(st.ByClass[c])})
		}
		if p, ok := histogram(st.LatencyOK); ok {
			p.Labels = base
			b.Points = append(b.Points, p)
		}
	}
	s := r.Series
	last := func(v []int64) (float64, bool) {
		if len(v) == 0 {
			return 0, false
		}
		return float64(v[len(v)-1]), true
	}
	one := []Label{plan}
	if v, ok := last(s.Active); ok {
		b.Points = append(b.Points, Point{Metric: Active, Labels: one, Value: v})
	}
	if v, ok := last(s.InFlight); ok {
		b.Points = append(b.Points, Point{Metric: InFlight, Labels: one, Value: v})
	}
	if v, ok := last(s.Connections); ok {
		b.Points = append(b.Points, Point{Metric: Conns, Labels: one, Value: v})
	}
	if v, ok := last(s.LagP99US); ok {
		b.Points = append(b.Points, Point{Metric: Lag, Labels: one, Value: v / 1e6})
	}
	if len(s.Target) > 0 {
		b.Points = append(b.Points, Point{Metric: Target, Labels: one, Value: s.Target[len(s.Target)-1]})
	}
	var dropped int64
	for _, d := range s.Dropped {
		dropped += d
	}
	b.Points = append(b.Points, Point{Metric: Dropped, Labels: one, Value: float64(dropped)})
	return b
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
