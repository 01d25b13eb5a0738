package gate

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// monitorResult is a 10 s run that ramps for 4 s and holds its peak for 6
// (the steady part is 4s-10s), with server series sampled every second
// from -1 s (before the load) to 11 s (the drain).
func monitorResult(t *testing.T, series map[string]result.MonitorSeries) *result.Result {
	t.Helper()
	r := build(t, result.RunInfo{DurationS: 10, Model: "closed"}, stepSpec{scenario: "s", name: "GET /", okUS: []int64{1000, 2000}})
	r.Series.IntervalS = 1
	for i := range 10 {
		r.Series.T = append(r.Series.T, float64(i))
		r.Series.Target = append(r.Series.Target, float64(min(i+1, 5))*20)
	}
	r.Monitors = series
	r.Generator.Cores = 4
	return r
}

// ser makes a series from values at t = -1, 0, 1, ...
func ser(unit string, vs ...float64) result.MonitorSeries {
	s := result.MonitorSeries{Unit: unit}
	for i, v := range vs {
		s.T = append(s.T, float64(i-1)+0.5)
		s.V = append(s.V, v)
	}
	return s
}

func TestSteadyWindow(t *testing.T) {
	r := monitorResult(t, nil)
	if from, to := r.SteadyWindow(); from != 4 || to != 10 {
		t.Errorf("steady window %v..%v, want 4..10 (the hold at the peak)", from, to)
	}
	// A pure ramp never holds its peak: the whole run stands in.
	for i := range r.Series.Target {
		r.Series.Target[i] = float64(i + 1)
	}
	if from, to := r.SteadyWindow(); from != 0 || to != 10 {
		t.Errorf("ramp-only window %v..%v, want 0..10", from, to)
	}
}

func TestMonitorThresholds(t *testing.T) {
	// Values at t = -0.5, 0.5, ... 11.5; the steady part (4..10) holds the
	// points at 4.5..9.5: indexes 5..10.
	r := monitorResult(t, map[string]result.MonitorSeries{
		//                                    ramp ---------->  steady ---------------->  drain
		"postgres.connections.active":    ser("count", 0, 1, 2, 3, 4, 60, 70, 80, 75, 70, 65, 1, 0),
		"process[nginx].cpu_pct":         ser("pct", 0, 5, 10, 20, 40, 80, 85, 89, 88, 87, 86, 99, 0),
		"postgres.cache.hit_ratio":       ser("ratio", 1, 1, 1, 1, 1, 0.99, 0.98, 0.995, 0.97, 0.99, 0.99, 0.5, 1),
		"redis.memory.used_bytes":        ser("bytes", 0, 0, 0, 0, 0, 100<<20, 200<<20, 300<<20, 300<<20, 300<<20, 300<<20, 0, 0),
		"postgres.longest_query_s":       ser("s", 0, 0, 0, 0, 0, 0.1, 0.2, 0.3, 0.25, 0.2, 0.1, 5, 0),
		"postgres.xact.commits_per_sec":  ser("1/s", 0, 0, 10, 20, 40, 500, 510, 520, 505, 500, 490, 0, 0),
		`prometheus[node].up{job="api"}`: ser("", 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1),
	})
	cases := []struct {
		expr  string
		pass  bool
		value string
		err   string
		why   string
	}{
		{"postgres.connections.active < 90", true, "max 80", "", "max over the steady part, not the drain"},
		{"postgres.connections.active < 80", false, "max 80", "", "equal to the limit fails <"},
		{"postgres.connections.active <= 80", true, "max 80", "", "<= takes the max too"},
		{"postgres.connections.active > 50", true, "min 60", "", "> takes the min, ignoring the ramp's zeros"},
		{"process[nginx].cpu < 90%", true, "max 89.0%", "", "unit suffix left out; the drain's 99% is outside the window"},
		{"process[nginx].cpu_pct < 88%", false, "max 89.0%", "", "exact key"},
		{"process[nginx].cpu < 90", true, "max 89.0%", "", "a plain number is in the series' unit"},
		{"postgres.cache.hit_ratio > 96%", true, "min 0.970", "", "a percentage against a ratio"},
		{"postgres.cache.hit_ratio > 0.98", false, "min 0.970", "", "a fraction against a ratio"},
		{"redis.memory.used < 256MiB", false, "max 300.0 MiB", "", "bytes with a unit; key without _bytes"},
		{"redis.memory.used_bytes < 1GiB", true, "max 300.0 MiB", "", "GiB"},
		{"postgres.longest_query_s < 500ms", true, "max 0.30s", "", "a duration against seconds"},
		{"postgres.xact.commits_per_sec > 400/s", true, "min 490/s", "", "a rate"},
		{`prometheus[node].up{job="api"} >= 1`, true, "min 1", "", "label matchers hold = inside braces"},
		{"postgres.connections.active < 90%", false, "", "postgres.connections.active is measured in a count; write the value as a plain number", "percent against a count"},
		{"postgres.longest_query_s < 1GiB", false, "", "measured in seconds; write the value as a duration such as 250ms", "bytes against seconds"},
		{"postgres.connections.activ < 90", false, "", `no monitor series "postgres.connections.activ" in this run; did you mean "postgres.connections.active"?`, "typo in a key"},
		{"redis.clients.connected < 90", false, "", `no monitor series "redis.clients.connected" in this run; redis has memory.used_bytes`, "series missing, others of the monitor listed"},
		{"host.cpu.busy < 90%", false, "", `no monitor series "host.cpu.busy" in this run (did the monitor start?`, "monitor absent"},
	}
	for _, c := range cases {
		got := Evaluate(r, []string{c.expr})[0]
		if c.err != "" {
			if !strings.Contains(got.Error, c.err) || got.Pass {
				t.Errorf("%s: %q gave %+v, want error containing %q", c.why, c.expr, got, c.err)
			}
			continue
		}
		if got.Error != "" || got.Pass != c.pass || got.Value != c.value {
			t.Errorf("%s: %q gave %+v, want pass=%v value %q", c.why, c.expr, got, c.pass, c.value)
		}
	}
}

func TestMonitorThresholdParse(t *testing.T) {
	cases := []struct {
		expr, err, why string
	}{
		{"postgres.connections.active == 5", "not ==", "== makes no sense for a varying series"},
		{"GET /: postgres.connections.active < 5", "belongs to the whole run", "per-step monitor threshold"},
		{"postgress.connections.active < 5", `did you mean "postgres.connections.active"?`, "typo in the kind"},
		{"nginx.cpu < 5", "a monitor series starts with one of postgres, redis, prometheus, process, host", "unknown dotted metric"},
		{"host.cpu.busy_pct < lots", `bad value "lots"`, "bad value"},
		{"p99.9x < 5ms", `did you mean "p99.9"?`, "a mistyped percentile stays a load metric"},
	}
	for _, c := range cases {
		_, err := Parse(c.expr)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: Parse(%q) = %v, want error containing %q", c.why, c.expr, err, c.err)
		}
	}
	for _, ok := range []string{"postgres.connections.active < 90", "process[nginx].cpu < 90%", `prometheus.up{job="a"} > 0`, "redis.memory.used_bytes < 512MiB", "host.net.rx_bytes_per_sec < 10MiB/s"} {
		if th, err := Parse(ok); err != nil || th.Kind != Monitor {
			t.Errorf("Parse(%q) = %+v, %v; want a monitor threshold", ok, th, err)
		}
	}
}

func TestServerLimitIndicator(t *testing.T) {
	flat := func(unit string, v float64) result.MonitorSeries {
		return ser(unit, v, v, v, v, v, v, v, v, v, v, v, v, v)
	}
	cases := []struct {
		series map[string]result.MonitorSeries
		want   []string // substrings of the message; none: no indicator
		why    string
	}{
		{map[string]result.MonitorSeries{"host.cpu.busy_pct": flat("pct", 50), "process[self].cpu_pct": flat("pct", 400)}, nil, "nothing at its limit; the generator is not a server"},
		{map[string]result.MonitorSeries{"host.cpu.busy_pct": flat("pct", 97)}, []string{"host CPU was 97% busy"}, "host CPU"},
		{map[string]result.MonitorSeries{"process[redis].cpu_pct": flat("pct", 99), "process[redis].threads": flat("count", 1)}, []string{"process[redis] CPU reached 99% (1 core(s)"}, "single-threaded process at one core"},
		{map[string]result.MonitorSeries{"process[pg].cpu_pct": flat("pct", 150), "process[pg].threads": flat("count", 40)}, nil, "a multi-threaded process at 1.5 of 4 cores has room"},
		{map[string]result.MonitorSeries{"process[pg].cpu_pct": flat("pct", 390), "process[pg].threads": flat("count", 40)}, []string{"process[pg] CPU reached 390% (4 core(s)"}, "all the machine's cores"},
		{map[string]result.MonitorSeries{"postgres.connections.max": flat("count", 100), "postgres.connections.total": flat("count", 98), "postgres.connections.active": flat("count", 60)}, []string{"postgres had 98 of max_connections 100 connections open"}, "connections at max_connections"},
		{map[string]result.MonitorSeries{"postgres.connections.max": flat("count", 100), "postgres.connections.total": flat("count", 20)}, nil, "connections well below the limit"},
		{map[string]result.MonitorSeries{"postgres.connections.waiting_lock": flat("count", 3)}, []string{"postgres had 3.0 sessions waiting on locks"}, "lock waits"},
		{map[string]result.MonitorSeries{"redis.clients.blocked": ser("count", 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0)}, []string{"redis had up to 2 client(s) blocked"}, "blocked redis clients"},
		{map[string]result.MonitorSeries{"redis.clients.blocked": ser("count", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0)}, nil, "blocked only in the drain"},
		{map[string]result.MonitorSeries{"redis.cpu_pct": flat("pct", 96), "host.cpu.busy_pct": flat("pct", 99)}, []string{"host CPU", "redis CPU reached 96%"}, "two findings, one indicator"},
	}
	for _, c := range cases {
		r := monitorResult(t, c.series)
		var ind *result.Indicator
		for _, i := range Indicators(r) {
			if i.ID == "server_limit" {
				ind = &i
			}
		}
		if len(c.want) == 0 {
			if ind != nil {
				t.Errorf("%s: unexpected indicator %q", c.why, ind.Message)
			}
			continue
		}
		if ind == nil {
			t.Errorf("%s: no server_limit indicator", c.why)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(ind.Message, w) {
				t.Errorf("%s: message %q lacks %q", c.why, ind.Message, w)
			}
		}
		if ind.Severity != SeverityWarn || len(ind.Evidence) == 0 {
			t.Errorf("%s: %+v, want a warning with evidence", c.why, ind)
		}
	}
}
