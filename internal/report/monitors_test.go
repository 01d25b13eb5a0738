package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// withMonitors gives r a 30 s series (a ramp for 9, a hold for 21, so the
// steady part is 9s-30s) and server series sampled from a second before
// the load to two after it, with two monitor problems.
func withMonitors(r *result.Result) *result.Result {
	r.Series.IntervalS = 1
	r.Series.T, r.Series.Target = nil, nil
	for i := range 30 {
		r.Series.T = append(r.Series.T, float64(i))
		r.Series.Target = append(r.Series.Target, float64(min(i+1, 10))*2)
	}
	r.Run.DurationS = 30
	at := func(unit string, f func(t float64) float64) result.MonitorSeries {
		s := result.MonitorSeries{Unit: unit}
		for i := -1; i < 33; i++ {
			t := float64(i) + 0.5
			s.T, s.V = append(s.T, t), append(s.V, f(t))
		}
		return s
	}
	r.Monitors = map[string]result.MonitorSeries{
		// Rises with the load; the ramp's low values stay out of the table.
		"postgres.connections.active":          at("count", func(t float64) float64 { return min(t, 12) }),
		"postgres.xact.commits_per_sec":        at("1/s", func(t float64) float64 { return 1000 + t }),
		"postgres.deadlocks_per_sec":           at("1/s", func(float64) float64 { return 0 }),
		"postgres[db.replica].cache.hit_ratio": at("ratio", func(float64) float64 { return 0.995 }),
		"redis.memory.used_bytes":              at("bytes", func(float64) float64 { return 3 << 20 }),
		"process[self].cpu_pct":                at("pct", func(float64) float64 { return 50 }),
		"process[nginx].cpu_pct":               at("pct", func(t float64) float64 { return 2 * t }),
		"host.load1":                           {Unit: "", T: []float64{1, 2}, V: []float64{0.5, 0.6}}, // died during the ramp
	}
	r.MonitorProblems = []result.MonitorProblem{
		{Monitor: "host", Severity: "warn", Message: "sample failed: boom", T: 2.5, LastT: 31.5, Count: 30},
		{Monitor: "redis[cache]", Severity: "warn", Message: "cannot start redis[cache] 127.0.0.1:1: connection refused; the run goes on without it", T: -1},
	}
	return r
}

func TestServerMetricsTable(t *testing.T) {
	r := withMonitors(healthyClosed(t))
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := `Server Metrics (steady part 9s-30s):           Min          Avg          Max
  postgres
    connections.active                        9.50         11.8           12
    xact.commits_per_sec                    1010/s       1020/s       1030/s
  postgres[db.replica]
    cache.hit_ratio                          0.995        0.995        0.995
  process[nginx]
    cpu_pct                                  19.0%        39.0%        59.0%
  redis
    memory.used_bytes                      3.0 MiB      3.0 MiB      3.0 MiB
  (1 series at zero throughout not shown; 1 series without a sample in the steady part)

Monitor Problems:
  ⚠ host: sample failed: boom (30 times, 2.5s-31.5s)
  ⚠ redis[cache]: cannot start redis[cache] 127.0.0.1:1: connection refused; the run goes on without it (at -1s)
`
	if !strings.Contains(out, want) {
		t.Errorf("server table not as expected; got:\n%s\nwant it to contain:\n%s", out, want)
	}
	if strings.Contains(out, "process[self]") {
		t.Error("the generator's own process belongs to the Generator line, not the server table")
	}
	if i, j := strings.Index(out, "Generator:"), strings.Index(out, "Server Metrics"); i < 0 || j < i {
		t.Error("the server table should follow the Generator line")
	}
}

func TestServerMetricsAbsent(t *testing.T) {
	r := healthyClosed(t)
	r.Monitors = map[string]result.MonitorSeries{"process[self].cpu_pct": {Unit: "pct", T: []float64{1}, V: []float64{5}}}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Server Metrics") || strings.Contains(b.String(), "Monitor Problems") {
		t.Errorf("a run with only the generator's own process shows no server table:\n%s", b.String())
	}
}
