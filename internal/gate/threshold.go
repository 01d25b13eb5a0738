// Package gate decides whether a run passed: it parses and evaluates
// threshold expressions against a result, and derives the indicators that
// explain what a run's numbers mean. It reads only finished results.
package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/suggest"
)

// Kind is what a metric measures, which decides the values it can be
// compared with: mixing them (p95 < 5%) is always a mistake in the plan.
type Kind int

const (
	// Duration metrics are latencies; Value is in microseconds.
	Duration Kind = iota + 1
	// Rate metrics are shares of requests; Value is a fraction 0..1.
	Rate
	// Count metrics are numbers of requests or iterations.
	Count
	// Throughput is requests per second over the measured run duration,
	// of those sent that came to an end (result.Totals.Timed): a dropped
	// arrival was never sent.
	Throughput
)

// Threshold is a parsed threshold expression.
type Threshold struct {
	Expr string
	// Step is the step name (or "scenario/name") the metric is taken over;
	// empty means the whole run.
	Step   string
	Metric string
	Op     string
	Value  float64
	Kind   Kind
}

// ParseError is a threshold that cannot be read. Msg leaves out the
// expression so callers that show the expression already can avoid
// repeating it.
type ParseError struct {
	Expr string
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("threshold %q: %s", e.Expr, e.Msg) }

var ops = []string{"<=", ">=", "==", "<", ">"}

// Parse reads "[STEP NAME:] METRIC OP VALUE".
func Parse(expr string) (Threshold, error) {
	fail := func(format string, a ...any) (Threshold, error) {
		return Threshold{}, &ParseError{Expr: expr, Msg: fmt.Sprintf(format, a...)}
	}
	t := Threshold{Expr: expr}
	rest := expr
	// The last ": " splits because step names are free text (they default
	// to "METHOD /path") and may contain ": " themselves; metrics never do.
	if i := strings.LastIndex(expr, ": "); i >= 0 {
		t.Step = strings.TrimSpace(expr[:i])
		rest = expr[i+2:]
		if t.Step == "" {
			return fail(`expected a step name before ":"`)
		}
	}
	i := opIndex(rest)
	if i < 0 {
		return fail("expected a comparison: METRIC OP VALUE with OP one of < <= > >= ==, such as p95 < 500ms")
	}
	for _, op := range ops {
		if strings.HasPrefix(rest[i:], op) {
			t.Op = op
			break
		}
	}
	if t.Op == "" {
		return fail("bad operator %q: expected one of < <= > >= ==", opRun(rest[i:]))
	}
	t.Metric = strings.TrimSpace(rest[:i])
	value := strings.TrimSpace(rest[i+len(t.Op):])
	if t.Metric == "" {
		return fail("expected a metric before %q, such as p95", t.Op)
	}
	if strings.ContainsAny(value[:min(len(value), 1)], "<>=!") {
		return fail("bad operator %q: expected one of < <= > >= ==", opRun(rest[i:]))
	}
	if value == "" {
		return fail("expected a value after %q", t.Op)
	}
	kind, ok := metricKind(t.Metric)
	if !ok && isMonitorMetric(t.Metric) {
		return parseMonitor(t, value)
	}
	if !ok {
		if s := suggest.Closest(t.Metric, knownMetrics()); s != "" {
			return fail("unknown metric %q; did you mean %q?", t.Metric, s)
		}
		return fail("unknown metric %q: expected a latency (p50 p75 p90 p95 p99 p99.9 min max avg, or with _all), a rate (error_rate success_rate CLASS_rate), a count (requests failed successful iterations CLASS) or rps", t.Metric)
	}
	t.Kind = kind
	v, msg := parseValue(t.Metric, kind, value)
	if msg != "" {
		return fail("bad value %q: %s", value, msg)
	}
	t.Value = v
	return t, nil
}

// opRun returns the run of operator characters at the start of s, so an
// error shows "=>" rather than just "=".
func opRun(s string) string {
	n := 0
	for n < len(s) && strings.IndexByte("<>=!", s[n]) >= 0 {
		n++
	}
	return s[:n]
}

func parseValue(metric string, kind Kind, v string) (float64, string) {
	switch kind {
	case Duration:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, "expected a duration such as 500ms"
		}
		return float64(d) / float64(time.Microsecond), ""
	case Rate:
		if num, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || f < 0 || f > 100 || math.IsNaN(f) {
				return 0, "expected a percentage from 0% to 100%, such as 1%"
			}
			return f / 100, ""
		}
		// A bare number is refused, 0 aside (the same in any unit): a
		// plain 1 reads as 1% to people and as 100% as a fraction, and
		// the difference once passed a run with half its requests failed.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f != 0 {
			return 0, fmt.Sprintf("%s is a rate; expected a percentage such as 1%% (a bare number is refused: 1 could mean 1%% or 100%%)", metric)
		}
		return 0, ""
	case Count:
		if strings.HasSuffix(v, "%") {
			return 0, fmt.Sprintf("%s is a count; expected a number such as 10 (use %s for a percentage)", metric, rateHint(metric))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Sprintf("%s is a count; expected a number such as 10", metric)
		}
		return f, ""
	case Throughput:
		num := strings.TrimSpace(strings.TrimSuffix(v, "/s"))
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, "expected a rate such as 100/s"
		}
		return f, ""
	}
	return 0, "unsupported metric"
}

func rateHint(metric string) string {
	switch metric {
	case "failed":
		return "error_rate"
	case "successful":
		return "success_rate"
	}
	if _, ok := sample.ParseClass(metric); ok {
		return metric + "_rate"
	}
	return "a rate metric"
}

// metricKind accepts any percentile pNN(.N), not just the ones the report
// prints, because the histogram can answer them all exactly.
func metricKind(m string) (Kind, bool) {
	base := strings.TrimSuffix(m, "_all")
	switch {
	case base == "min" || base == "max" || base == "avg":
		return Duration, true
	case percentile(base) > 0:
		return Duration, true
	}
	switch m {
	case "error_rate", "success_rate":
		return Rate, true
	case "requests", "failed", "successful", "iterations":
		return Count, true
	case "rps":
		return Throughput, true
	}
	if c, ok := strings.CutSuffix(m, "_rate"); ok {
		if cl, ok := sample.ParseClass(c); ok && cl.Failed() {
			return Rate, true
		}
	}
	if cl, ok := sample.ParseClass(m); ok && cl.Failed() {
		return Count, true
	}
	return 0, false
}

// percentile returns N for "pN" with 0 < N <= 100, else 0.
func percentile(m string) float64 {
	num, ok := strings.CutPrefix(m, "p")
	if !ok || num == "" || num[0] < '0' || num[0] > '9' {
		return 0
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || f > 100 {
		return 0
	}
	return f
}

func knownMetrics() []string {
	ms := []string{"p50", "p75", "p90", "p95", "p99", "p99.9", "min", "max", "avg"}
	for _, m := range ms[:9] {
		ms = append(ms, m+"_all")
	}
	ms = append(ms, "error_rate", "success_rate", "requests", "failed", "successful", "iterations", "rps")
	for _, c := range sample.FailureClasses() {
		ms = append(ms, c.String()+"_rate", c.String())
	}
	return ms
}

// Evaluate checks each expression against r. A threshold that cannot be
// parsed or measured fails: a gate that silently passes on a typo would
// let a regression through.
func Evaluate(r *result.Result, exprs []string) []result.Threshold {
	out := make([]result.Threshold, 0, len(exprs))
	for _, e := range exprs {
		rt := result.Threshold{Expr: e}
		t, err := Parse(e)
		if err != nil {
			if pe, ok := err.(*ParseError); ok {
				rt.Error = pe.Msg
			} else {
				rt.Error = err.Error()
			}
			out = append(out, rt)
			continue
		}
		got, shown, err := t.Measure(r)
		if err != nil {
			rt.Error = err.Error()
			out = append(out, rt)
			continue
		}
		rt.Value = shown
		rt.Pass = compare(got, t.Op, t.Value)
		out = append(out, rt)
	}
	return out
}

// AllPass reports whether every threshold passed; none at all passes.
func AllPass(ts []result.Threshold) bool {
	for _, t := range ts {
		if !t.Pass || t.Error != "" {
			return false
		}
	}
	return true
}

func compare(got float64, op string, want float64) bool {
	switch op {
	case "<":
		return got < want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case ">=":
		return got >= want
	case "==":
		return got == want
	}
	return false
}

// scope is the set of counts and histograms a metric is taken over.
type scope struct {
	what                         string
	requests, successful, failed int64
	timed                        int64 // requests sent that came to an end (result.Totals.Timed)
	byClass                      map[string]int64
	ok, all                      []result.Latency
	iterations                   int64
	whole                        bool
}

func scopeOf(r *result.Result, step string) (scope, error) {
	if step == "" {
		return scope{
			what: "the run", requests: r.Totals.Requests, successful: r.Totals.Successful,
			failed: r.Totals.Failed, timed: r.Totals.Timed(), byClass: r.Totals.ByClass,
			ok: []result.Latency{r.Totals.LatencyOK}, all: []result.Latency{r.Totals.LatencyAll},
			iterations: r.Totals.Iterations, whole: true,
		}, nil
	}
	// A bare name shared by several scenarios means all of them: the name
	// is the metric key, and the histograms merge exactly.
	s := scope{what: fmt.Sprintf("step %q", step), byClass: map[string]int64{}}
	found := false
	for _, st := range r.Steps {
		if st.Name != step && st.Scenario+"/"+st.Name != step {
			continue
		}
		found = true
		s.requests += st.Requests
		s.timed += st.Timed()
		s.successful += st.Successful
		s.failed += st.Failed
		for c, n := range st.ByClass {
			s.byClass[c] += n
		}
		s.ok = append(s.ok, st.LatencyOK)
		s.all = append(s.all, st.LatencyAll)
	}
	if !found {
		names := make([]string, 0, len(r.Steps))
		for _, st := range r.Steps {
			names = append(names, st.Name, st.Scenario+"/"+st.Name)
		}
		if sg := suggest.Closest(step, names); sg != "" {
			return s, fmt.Errorf("unknown step %q; did you mean %q?", step, sg)
		}
		return s, fmt.Errorf("unknown step %q: the run has no step of that name", step)
	}
	return s, nil
}

func merged(ls []result.Latency) (*hdr.Histogram, error) {
	h := result.NewHistogram()
	for _, l := range ls {
		lh, err := l.Histogram()
		if err != nil {
			return nil, err
		}
		h.Merge(lh)
	}
	return h, nil
}

// Measure returns the metric's value in the threshold's unit and as the
// report would print it.
func (t Threshold) Measure(r *result.Result) (float64, string, error) {
	if t.Kind == Monitor {
		return t.measureMonitor(r)
	}
	s, err := scopeOf(r, t.Step)
	if err != nil {
		return 0, "", err
	}
	m := t.Metric
	switch t.Kind {
	case Duration:
		return measureDuration(s, m)
	case Rate:
		return measureRate(s, m)
	case Count:
		return measureCount(s, m)
	case Throughput:
		if r.Run.DurationS <= 0 {
			return 0, "", fmt.Errorf("the run has no measured duration, so rps is undefined")
		}
		v := float64(s.timed) / r.Run.DurationS
		return v, fmt.Sprintf("%.2f/s", v), nil
	}
	return 0, "", fmt.Errorf("metric %q cannot be measured", m)
}

// measureDuration is a latency metric (p95, avg, max_all, ...) over the
// scope's successful requests, or all of them for a _all metric.
func measureDuration(s scope, m string) (float64, string, error) {
	base, all := strings.CutSuffix(m, "_all")
	ls, over := s.ok, "successful requests"
	if all {
		ls, over = s.all, "requests"
	}
	h, err := merged(ls)
	if err != nil {
		return 0, "", err
	}
	if h.TotalCount() == 0 {
		return 0, "", fmt.Errorf("no %s in %s to measure %s over", over, s.what, m)
	}
	var v float64
	switch base {
	case "min":
		v = float64(h.Min())
	case "max":
		v = float64(h.Max())
	case "avg":
		v = h.Mean()
	default:
		v = float64(h.ValueAtPercentile(percentile(base)))
	}
	return v, formatDuration(int64(math.Round(v))), nil
}

// measureRate is a share of the scope's requests (error_rate, ...).
func measureRate(s scope, m string) (float64, string, error) {
	if s.requests == 0 {
		return 0, "", fmt.Errorf("no requests in %s, so %s is undefined", s.what, m)
	}
	var n int64
	switch m {
	case "error_rate":
		n = s.failed
	case "success_rate":
		n = s.successful
	default:
		n = s.byClass[strings.TrimSuffix(m, "_rate")]
	}
	v := float64(n) / float64(s.requests)
	return v, fmt.Sprintf("%.2f%%", v*100), nil
}

// measureCount is a count of the scope's requests (failed, a class, ...)
// or the run's iterations.
func measureCount(s scope, m string) (float64, string, error) {
	var n int64
	switch m {
	case "requests":
		n = s.requests
	case "failed":
		n = s.failed
	case "successful":
		n = s.successful
	case "iterations":
		if !s.whole {
			return 0, "", fmt.Errorf("iterations is measured only over the whole run, not per step")
		}
		n = s.iterations
	default:
		n = s.byClass[m]
	}
	return float64(n), strconv.FormatInt(n, 10), nil
}

// formatDuration prints a latency as the reports do.
func formatDuration(us int64) string { return result.FormatDuration(us) }
