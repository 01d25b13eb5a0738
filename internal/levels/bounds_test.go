package levels

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// A capacity whose bounding levels were held back by the generator is no
// answer about the target (issue 25: every level suspect, yet "Capacity:
// 96.875 iterations/s" and exit 0). Levels that do not bound it do not
// matter; a server at its limit at the failing rate is named.
func TestCapacityBounds(t *testing.T) {
	lv := func(v float64, pass bool, suspect string, ids ...string) result.Level {
		r := &result.Result{}
		for _, id := range ids {
			r.Indicators = append(r.Indicators, result.Indicator{ID: id, Message: id + " happened"})
		}
		return result.Level{Vary: plan.VaryRate, Value: v, Pass: pass, Suspect: suspect, Result: r}
	}
	clean := []result.Level{lv(10, true, "", "dropped"), lv(20, true, ""), lv(40, false, "", "server_limit"), lv(30, true, "")}
	if why, bound := bounds(clean, 30, 40); why != "" || bound != "40/s: server_limit happened" {
		t.Errorf("clean bounds: undetermined %q, bound %q", why, bound)
	}
	lag := []result.Level{lv(10, true, ""), lv(20, false, "generator lag p99 9ms")}
	if why, _ := bounds(lag, 10, 20); !strings.Contains(why, "20/s is suspect: generator lag") {
		t.Errorf("a suspect failing level: undetermined %q", why)
	}
	dropped := []result.Level{lv(10, true, "", "dropped"), lv(20, false, "")}
	if why, _ := bounds(dropped, 10, 20); !strings.Contains(why, "10/s: dropped happened") {
		t.Errorf("a passing level that dropped arrivals: undetermined %q", why)
	}
	lagged := []result.Level{lv(10, true, "", "generator_lag"), lv(20, false, "")}
	if why, _ := bounds(lagged, 10, 20); why != "" {
		t.Errorf("lag the level does not find suspect against its latency: undetermined %q", why)
	}
	none := []result.Level{lv(10, false, "", "generator_cpu")}
	if why, _ := bounds(none, 0, 10); why == "" {
		t.Error("no rate passed and the only failure was generator-bound: want undetermined")
	}
}

// Every level answers to the SLO and to the plan's thresholds, each once.
func TestCriteriaAddsThePlansThresholds(t *testing.T) {
	p := &plan.Plan{Thresholds: []plan.Located{{Value: "p50 < 1us"}, {Value: "error_rate < 1%"}}}
	got := strings.Join(Criteria(p, []string{"error_rate < 1%", "p95 < 200ms"}), "; ")
	if want := "error_rate < 1%; p95 < 200ms; p50 < 1us"; got != want {
		t.Errorf("criteria %q, want %q", got, want)
	}
}

// The server resource a capacity is bound by is the one gate's monitors
// find at its limit: bounds reads the indicator gate produces, not a name
// of its own (it listed server_at_limit, which nothing produces).
func TestCapacityBoundByGatesServerLimit(t *testing.T) {
	r := &result.Result{Run: result.RunInfo{DurationS: 10, Model: "open"}}
	r.Series.IntervalS = 1
	busy := result.MonitorSeries{Unit: "pct"}
	for i := range 10 {
		r.Series.T = append(r.Series.T, float64(i))
		r.Series.Target = append(r.Series.Target, 100)
		busy.T, busy.V = append(busy.T, float64(i)+0.5), append(busy.V, 97)
	}
	r.Monitors = map[string]result.MonitorSeries{"host.cpu.busy_pct": busy}
	r.Indicators = gate.Indicators(r)
	levels := []result.Level{
		{Vary: plan.VaryRate, Value: 10, Pass: true, Result: &result.Result{}},
		{Vary: plan.VaryRate, Value: 20, Result: r},
	}
	why, bound := bounds(levels, 10, 20)
	if why != "" || !strings.HasPrefix(bound, "20/s: ") || !strings.Contains(bound, "host CPU was 97% busy") {
		t.Errorf("undetermined %q, bound %q; want the failing level's server_limit finding (indicators %+v)", why, bound, r.Indicators)
	}
}
