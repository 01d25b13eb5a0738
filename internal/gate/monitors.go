package gate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/monitorkind"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/suggest"
)

// Monitor metrics are server-side series from the run's monitors, named by
// their key: "postgres.connections.active", "process[nginx].cpu_pct".
// Value is in the unit the threshold was written in (see monitorValue).
const Monitor Kind = 100

// monitorKinds are the prefixes a monitor series key starts with.
var monitorKinds = monitorkind.Kinds()

// Limits behind the server_limit indicator.
const (
	cpuAtLimitPct       = 95.0 // host CPU busy, or a process's share of its cores
	pgConnsAtLimit      = 0.95 // connections in use over max_connections
	pgWaitingLockAvg    = 1.0  // sessions waiting on a lock, on average
	ephemeralPortsAbove = 90.0 // % of the local port range in use
)

// opIndex finds the comparison operator, skipping what is inside [...]
// and {...}: a monitor key may hold both, and a Prometheus label matcher
// holds "=" (`prometheus.up{job="api"} > 0`).
func opIndex(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '[' || c == '{':
			depth++
		case (c == ']' || c == '}') && depth > 0:
			depth--
		case depth == 0 && strings.IndexByte("<>=!", c) >= 0:
			return i
		}
	}
	return -1
}

// monitorPrefix is the kind a monitor key starts with, or "".
func monitorPrefix(key string) string {
	i := strings.IndexAny(key, ".[")
	if i <= 0 {
		return ""
	}
	return key[:i]
}

// isMonitorMetric tells a monitor series key from a mistyped load metric:
// it starts with a monitor kind (or a near miss of one), or it holds a
// "." and resembles no load metric.
func isMonitorMetric(m string) bool {
	kind := monitorPrefix(m)
	if kind == "" {
		return false
	}
	if monitorkind.Is(kind) {
		return true
	}
	return suggest.Closest(kind, monitorKinds) != "" || strings.Contains(m, ".") && suggest.Closest(m, knownMetrics()) == ""
}

// parseMonitor finishes Parse for a metric that is no load metric but
// names a monitor series.
func parseMonitor(t Threshold, value string) (Threshold, error) {
	fail := func(format string, a ...any) (Threshold, error) {
		return Threshold{}, &ParseError{Expr: t.Expr, Msg: fmt.Sprintf(format, a...)}
	}
	kind := monitorPrefix(t.Metric)
	if !monitorkind.Is(kind) {
		msg := fmt.Sprintf("unknown metric %q: a monitor series starts with one of %s, such as postgres.connections.active or process[nginx].cpu", t.Metric, strings.Join(monitorKinds, ", "))
		if s := suggest.Closest(kind, monitorKinds); s != "" && kind != "" {
			msg = fmt.Sprintf("unknown metric %q; did you mean %q?", t.Metric, s+strings.TrimPrefix(t.Metric, kind))
		}
		return fail("%s", msg)
	}
	if t.Step != "" {
		return fail("monitor series %s belongs to the whole run, not to step %q: leave out %q", t.Metric, t.Step, t.Step+": ")
	}
	if t.Op == "==" {
		return fail("a monitor series varies over the run: compare it with < <= (its maximum) or > >= (its minimum), not ==")
	}
	v, _, msg := monitorValue(value)
	if msg != "" {
		return fail("bad value %q: %s", value, msg)
	}
	t.Kind, t.Value = Monitor, v
	return t, nil
}

// Value classes a monitor threshold may be written in.
const (
	valPlain   = "" // a bare number, in the series' own unit
	valPercent = "%"
	valBytes   = "bytes"
	valSeconds = "s"
	valPerSec  = "/s" // also with bytes: 10MiB/s
)

var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// monitorValue reads a threshold value for a monitor series: a number,
// optionally with %, a byte unit (512MiB), a duration (250ms) or /s. The
// number is returned in base units (bytes, seconds, percent points).
func monitorValue(s string) (float64, string, string) {
	const want = "expected a number, optionally with %, a byte unit (512MiB), a duration (250ms) or /s"
	s = strings.TrimSpace(s)
	num := func(x string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	if f, ok := num(s); ok {
		return f, valPlain, ""
	}
	if x, ok := strings.CutSuffix(s, "%"); ok {
		if f, ok := num(x); ok {
			return f, valPercent, ""
		}
		return 0, "", want
	}
	perSec := false
	if x, ok := strings.CutSuffix(s, "/s"); ok {
		s, perSec = x, true
		if f, ok := num(s); ok {
			return f, valPerSec, ""
		}
	}
	for _, u := range byteUnits {
		if x, ok := strings.CutSuffix(s, u.suffix); ok {
			if f, ok := num(x); ok {
				if perSec {
					return f * u.mult, valBytes + valPerSec, ""
				}
				return f * u.mult, valBytes, ""
			}
		}
	}
	if !perSec {
		if d, err := time.ParseDuration(s); err == nil {
			return d.Seconds(), valSeconds, ""
		}
	}
	return 0, "", want
}

// monitorParts splits a parsed monitor threshold again, for its value text.
func monitorParts(expr string) (value string) {
	rest := expr
	if i := strings.LastIndex(expr, ": "); i >= 0 {
		rest = expr[i+2:]
	}
	i := opIndex(rest)
	if i < 0 {
		return ""
	}
	for _, op := range ops {
		if strings.HasPrefix(rest[i:], op) {
			return strings.TrimSpace(rest[i+len(op):])
		}
	}
	return ""
}

// findMonitor resolves a key as written to a series of the run: exactly,
// or with the unit suffix left out ("process[nginx].cpu" is cpu_pct).
func findMonitor(r *result.Result, key string) (string, result.MonitorSeries, error) {
	if s, ok := r.Monitors[key]; ok {
		return key, s, nil
	}
	for _, suf := range []string{"_pct", "_per_sec", "_bytes", "_s", "_ratio", "_bytes_per_sec"} {
		if s, ok := r.Monitors[key+suf]; ok {
			return key + suf, s, nil
		}
	}
	if len(r.Monitors) == 0 {
		return "", result.MonitorSeries{}, fmt.Errorf("the run has no monitor series: add monitors: to the plan (or --monitor) to measure %s", key)
	}
	keys := make([]string, 0, len(r.Monitors))
	for k := range r.Monitors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if s := suggest.Closest(key, keys); s != "" {
		return "", result.MonitorSeries{}, fmt.Errorf("no monitor series %q in this run; did you mean %q?", key, s)
	}
	label := key
	if i := strings.Index(key, "."); i > 0 {
		label = key[:i]
	}
	var same []string
	for _, k := range keys {
		if strings.HasPrefix(k, label+".") {
			same = append(same, strings.TrimPrefix(k, label+"."))
		}
	}
	if len(same) > 0 {
		if len(same) > 12 {
			same = append(same[:12], "…")
		}
		return "", result.MonitorSeries{}, fmt.Errorf("no monitor series %q in this run; %s has %s", key, label, strings.Join(same, ", "))
	}
	return "", result.MonitorSeries{}, fmt.Errorf("no monitor series %q in this run (did the monitor start? see monitor_problems)", key)
}

// measureMonitor takes the series' maximum over the steady part for < and
// <= (it must stay below all along), its minimum for > and >=.
func (t Threshold) measureMonitor(r *result.Result) (float64, string, error) {
	key, s, err := findMonitor(r, t.Metric)
	if err != nil {
		return 0, "", err
	}
	from, to := r.SteadyWindow()
	st := s.Stats(from, to)
	if st.N == 0 {
		return 0, "", fmt.Errorf("no samples of %s in the steady part of the run (%.0fs-%.0fs): the monitor failed or started late (see monitor_problems)", key, from, to)
	}
	got, which := st.Max, "max"
	if t.Op == ">" || t.Op == ">=" {
		got, which = st.Min, "min"
	}
	shown := which + " " + result.FormatMonitorValue(s.Unit, got)
	_, class, _ := monitorValue(monitorParts(t.Expr))
	v, err := inWrittenUnit(key, s.Unit, class, got)
	if err != nil {
		return 0, "", err
	}
	return v, shown, nil
}

// inWrittenUnit converts a series value to the unit the threshold was
// written in, refusing a comparison that mixes kinds (a count against 90%).
func inWrittenUnit(key, unit, class string, v float64) (float64, error) {
	mismatch := func(want string) error {
		return fmt.Errorf("%s is measured in %s; write the value %s", key, unitName(unit), want)
	}
	switch class {
	case valPlain:
		return v, nil
	case valPercent:
		switch unit {
		case "pct":
			return v, nil
		case "ratio":
			return v * 100, nil
		}
		return 0, mismatch("as a plain number")
	case valBytes:
		if unit == "bytes" || unit == "bytes/s" {
			return v, nil
		}
	case valBytes + valPerSec:
		if unit == "bytes/s" {
			return v, nil
		}
	case valSeconds:
		if unit == "s" {
			return v, nil
		}
	case valPerSec:
		if unit == "1/s" || unit == "bytes/s" {
			return v, nil
		}
	}
	switch unit {
	case "pct", "ratio":
		return 0, mismatch("as a percentage such as 90%")
	case "bytes":
		return 0, mismatch("in bytes such as 512MiB")
	case "bytes/s":
		return 0, mismatch("in bytes per second such as 10MiB/s")
	case "s":
		return 0, mismatch("as a duration such as 250ms")
	case "1/s":
		return 0, mismatch("as a rate such as 100/s")
	}
	return 0, mismatch("as a plain number")
}

func unitName(unit string) string {
	switch unit {
	case "pct":
		return "percent"
	case "ratio":
		return "a ratio from 0 to 1"
	case "bytes":
		return "bytes"
	case "bytes/s":
		return "bytes per second"
	case "s":
		return "seconds"
	case "1/s":
		return "events per second"
	case "count":
		return "a count"
	}
	return "plain numbers"
}

// monitorIndicators finds server resources that sat at their limit during
// the steady part of the run: when throughput went flat, this is where.
func monitorIndicators(r *result.Result) []result.Indicator {
	if len(r.Monitors) == 0 {
		return nil
	}
	from, to := r.SteadyWindow()
	l := &limitScan{ev: map[string]float64{}, cores: max(r.Generator.Cores, 1)}
	l.stat = func(key string) (result.MonitorStats, bool) {
		s, ok := r.Monitors[key]
		if !ok {
			return result.MonitorStats{}, false
		}
		st := s.Stats(from, to)
		return st, st.N > 0
	}
	keys := make([]string, 0, len(r.Monitors))
	for k := range r.Monitors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l.check(k)
	}
	if len(l.found) == 0 {
		return nil
	}
	return []result.Indicator{{
		ID: "server_limit", Severity: SeverityWarn, Evidence: l.ev,
		Message: fmt.Sprintf("Server resource at its limit during the steady part (%.0fs-%.0fs): %s - throughput cannot grow past it; this is the bottleneck to look at first",
			from, to, strings.Join(l.found, "; ")),
	}}
}

// limitScan is what monitorIndicators found so far: what sat at its
// limit, with the evidence.
type limitScan struct {
	stat  func(key string) (result.MonitorStats, bool)
	found []string
	ev    map[string]float64
	cores int
}

// check looks at one monitor series for a resource at its limit.
func (l *limitScan) check(k string) {
	label, metric := result.SplitMonitorKey(k)
	if metric == "" {
		return
	}
	kind := monitorPrefix(k)
	switch {
	case kind == monitorkind.Host && metric == "cpu.busy_pct":
		if st, ok := l.stat(k); ok && st.Max >= cpuAtLimitPct {
			l.found = append(l.found, fmt.Sprintf("%s CPU was %.0f%% busy (this machine: the generator runs here too)", label, st.Max))
			l.ev[k+".max"] = st.Max
		}
	case kind == monitorkind.Host && metric == "tcp.ephemeral_used_pct":
		if st, ok := l.stat(k); ok && st.Max >= ephemeralPortsAbove {
			l.found = append(l.found, fmt.Sprintf("%s used %.0f%% of its local port range (TIME_WAIT piles up: keep connections alive)", label, st.Max))
			l.ev[k+".max"] = st.Max
		}
	case kind == monitorkind.Process && metric == "cpu_pct" && label != monitorkind.Label(monitorkind.Process, monitorkind.Self, ""):
		st, ok := l.stat(k)
		if !ok {
			return
		}
		// A process can use as many cores as it has threads, up to
		// the machine's: a single-threaded one is full at 100%.
		capacity := float64(l.cores)
		if th, ok := l.stat(label + ".threads"); ok && th.Max >= 1 {
			capacity = min(capacity, th.Max)
		}
		if st.Max >= cpuAtLimitPct*capacity {
			l.found = append(l.found, fmt.Sprintf("%s CPU reached %.0f%% (%.0f core(s) it can use)", label, st.Max, capacity))
			l.ev[k+".max"] = st.Max
		}
	case kind == monitorkind.Redis && metric == "cpu_pct":
		// Redis runs commands on one thread.
		if st, ok := l.stat(k); ok && st.Max >= cpuAtLimitPct {
			l.found = append(l.found, fmt.Sprintf("%s CPU reached %.0f%% of its one command thread", label, st.Max))
			l.ev[k+".max"] = st.Max
		}
	case kind == monitorkind.Redis && metric == "clients.blocked":
		if st, ok := l.stat(k); ok && st.Max > 0 {
			l.found = append(l.found, fmt.Sprintf("%s had up to %.0f client(s) blocked", label, st.Max))
			l.ev[k+".max"] = st.Max
		}
	case kind == monitorkind.Postgres && metric == "connections.max":
		st, ok := l.stat(k)
		if !ok || st.Max <= 0 {
			return
		}
		limit := st.Min * pgConnsAtLimit
		if tot, ok := l.stat(label + ".connections.total"); ok && tot.Max >= limit {
			l.found = append(l.found, fmt.Sprintf("%s had %.0f of max_connections %.0f connections open", label, tot.Max, st.Min))
			l.ev[label+".connections.total.max"] = tot.Max
			l.ev[k] = st.Min
		} else if act, ok := l.stat(label + ".connections.active"); ok && act.Max >= limit {
			l.found = append(l.found, fmt.Sprintf("%s had %.0f of max_connections %.0f connections active", label, act.Max, st.Min))
			l.ev[label+".connections.active.max"] = act.Max
			l.ev[k] = st.Min
		}
	case kind == monitorkind.Postgres && metric == "connections.waiting_lock":
		if st, ok := l.stat(k); ok && st.Avg >= pgWaitingLockAvg {
			l.found = append(l.found, fmt.Sprintf("%s had %.1f sessions waiting on locks on average (up to %.0f)", label, st.Avg, st.Max))
			l.ev[k+".avg"] = st.Avg
		}
	}
}
