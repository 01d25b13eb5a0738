package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// Edge cases of the diagnostic indicators on constructed results; the
// honest triggers (real runs against loopback servers) are in package
// levels, which can run the engine.

func find(ins []result.Indicator, id string) (result.Indicator, bool) {
	for _, in := range ins {
		if in.ID == id {
			return in, true
		}
	}
	return result.Indicator{}, false
}

func TestErrorsDominated(t *testing.T) {
	cases := []struct {
		name  string
		fails map[sample.Class]int64
		ok    int
		fire  bool
	}{
		// All failures one class in an overloaded run: named.
		{"one class", map[sample.Class]int64{sample.Timeout: 100}, 900, true},
		// 80% is enough to call it the cause.
		{"80 percent", map[sample.Class]int64{sample.Timeout: 80, sample.ConnReset: 20}, 900, true},
		// Spread over classes: no single cause.
		{"mixed", map[sample.Class]int64{sample.Timeout: 50, sample.ServerError: 50}, 900, false},
		// A healthy run with a few failures of one class is not overloaded.
		{"healthy", map[sample.Class]int64{sample.ServerError: 20}, 980, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, "open", c.ok, c.fails)
			in, ok := find(Indicators(r), "errors_dominated")
			if ok != c.fire {
				t.Fatalf("fired %v, want %v: %v", ok, c.fire, Indicators(r))
			}
			if ok && (in.Evidence["share"] < 0.8 || !strings.Contains(in.Message, "timeout")) {
				t.Errorf("indicator %+v", in)
			}
		})
	}
}

// series builds n one-second intervals with the given successful
// completions and p95 per interval (plus one short last interval, which
// the indicator ignores).
func series(ok, p95 func(i int) int64, n int) result.Series {
	s := result.Series{IntervalS: 1, Failed: map[string][]int64{}}
	for i := 0; i <= n; i++ {
		s.T = append(s.T, float64(i))
		s.OK = append(s.OK, ok(i))
		s.Completed = append(s.Completed, ok(i))
		s.P95US = append(s.P95US, p95(i))
		s.Target = append(s.Target, float64(10+i))
	}
	return s
}

func steadyTarget(s result.Series) result.Series {
	for i := range s.Target {
		s.Target[i] = 200
	}
	return s
}

func withInFlight(s result.Series, f func(i int) int64) result.Series {
	for i := range s.T {
		s.InFlight = append(s.InFlight, f(i))
	}
	return s
}

func TestSaturatedInRun(t *testing.T) {
	flat := func(int) int64 { return 1000 }
	rising := func(i int) int64 { return int64(20_000 + 10_000*i) }
	growing := func(i int) int64 { return int64(500 + 100*i) }
	cases := []struct {
		name string
		s    result.Series
		fire bool
	}{
		{"flat throughput, rising p95", series(flat, rising, 40), true},
		{"throughput follows the load", series(growing, rising, 40), false},
		{"flat and steady", series(flat, func(int) int64 { return 20_000 }, 40), false},
		// Rising by 50% but only by microseconds is noise, not a queue.
		{"rise too small to matter", series(flat, func(i int) int64 { return int64(1000 + 50*i) }, 40), false},
		{"too short to tell", series(flat, rising, 3), false},
		// Little's law: p95 tripling at flat throughput means more
		// requests wait in flight; when in flight stays put (2 steady
		// users), the rise is the generator's host stalling.
		{"in flight grows with the queue", withInFlight(series(flat, rising, 40), func(i int) int64 { return int64(20 + 10*i) }), true},
		{"in flight fixed", withInFlight(series(flat, rising, 40), func(int) int64 { return 2 }), false},
		// A gate's hold offers the same load throughout, so its throughput
		// is flat by design: p95 and in flight rising there (a busy
		// generator, a warming cache) find no ceiling (world-cup's 200
		// gate, whose throughput was 8x the previous gate's).
		{"steady load", withInFlight(steadyTarget(series(flat, rising, 40)), func(i int) int64 { return int64(20 + 10*i) }), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, ok := saturatedInRun(c.s, 0)
			if ok != c.fire {
				t.Fatalf("fired %v, want %v (%v)", ok, c.fire, in)
			}
			if ok && (in.Evidence["window_s"] != 30 || in.Evidence["p95_last_us"] <= in.Evidence["p95_first_us"]) {
				t.Errorf("evidence %v: want the last 30s", in.Evidence)
			}
		})
	}
}

// The drain after the profile's end (nothing new offered, in flight
// emptying, throughput falling) is not part of the window: on a busy CI
// machine it spanned five intervals and a run that saturated for its
// whole stage was not called saturated.
func TestSaturatedIgnoresTheDrain(t *testing.T) {
	inFlight := func(i int) int64 { return int64(20 + 10*i) }
	s := withInFlight(series(func(int) int64 { return 1000 }, func(i int) int64 { return int64(20_000 + 10_000*i) }, 40), inFlight)
	const measured = 41 // the 41 one-second intervals 0..40 are the stage
	for i, ok := range []int64{400, 30, 0, 20, 0} {
		s.T = append(s.T, float64(measured+i))
		s.OK = append(s.OK, ok)
		s.Completed = append(s.Completed, ok)
		s.P95US = append(s.P95US, 0)
		s.Target = append(s.Target, s.Target[len(s.Target)-1])
		s.InFlight = append(s.InFlight, int64(300-60*i))
	}
	in, ok := saturatedInRun(s, measured)
	if !ok {
		t.Fatal("a stage saturated throughout was not called saturated once its drain followed it")
	}
	if in.Evidence["window_s"] != 30 || in.Evidence["ok_rps_last"] != 1000 {
		t.Errorf("evidence %v: want the last 30s of the stage, at 1000 req/s", in.Evidence)
	}
}

// One request recorded long past every timeout (a busy machine delayed
// it) does not hide fifty that queued until their 500ms deadline.
func TestTimeoutsClusteredDespiteAStraggler(t *testing.T) {
	r := build(t, result.RunInfo{DurationS: 10, Model: "open"},
		stepSpec{scenario: "s", name: "GET /slow", okUS: spread(900, 1000, 20_000), fails: map[sample.Class]int64{sample.Timeout: 50}, failUS: 500_300},
		stepSpec{scenario: "s", name: "GET /other", okUS: spread(10, 1000, 2000), fails: map[sample.Class]int64{sample.Timeout: 1}, failUS: 1_200_000})
	r.Plan.Source = "defaults: {timeout: 2s}\nscenarios:\n  s:\n    steps:\n      - {get: /slow, timeout: 500ms}\n      - {get: /other}\n"
	in, ok := timeoutsClustered(r)
	if !ok || in.Evidence["timeout_us"] != 500_000 || in.Evidence["at_timeout"] != 50 {
		t.Errorf("50 requests at the 500ms timeout and one at 1.2s: %v %v", ok, in)
	}
}

func TestTimeoutsClustered(t *testing.T) {
	src := "defaults: {timeout: 2s}\nscenarios:\n  s:\n    steps:\n      - {get: /slow, timeout: 500ms}\n"
	mk := func(timeouts int64, failUS int64) *result.Result {
		r := build(t, result.RunInfo{DurationS: 10, Model: "open"},
			stepSpec{scenario: "s", name: "GET /", okUS: spread(900, 1000, 20_000), fails: map[sample.Class]int64{sample.Timeout: timeouts}, failUS: failUS})
		r.Plan.Source = src
		return r
	}
	in, ok := timeoutsClustered(mk(50, 500_300))
	if !ok || in.Evidence["timeout_us"] != 500_000 || in.Evidence["at_timeout"] != 50 {
		t.Errorf("50 requests at the step's 500ms timeout: %v %v", ok, in)
	}
	if _, ok := timeoutsClustered(mk(2, 500_300)); ok {
		t.Error("2 timeouts of 902 requests are not a cluster")
	}
	// Timed out, but nowhere near a configured timeout (the value is not
	// what the plan sets): no claim about a queue.
	if _, ok := timeoutsClustered(mk(50, 1_000_000)); ok {
		t.Error("timeouts at 1s match neither 500ms nor 2s")
	}
	got := ConfiguredTimeouts(src)
	if len(got) != 2 || got[0] != 500*time.Millisecond || got[1] != 2*time.Second {
		t.Errorf("configured timeouts %v", got)
	}
	if got := ConfiguredTimeouts("scenarios: {}"); len(got) != 1 || got[0] != 30*time.Second {
		t.Errorf("default timeout %v", got)
	}
}

func TestLevelIndicators(t *testing.T) {
	lvl := func(v float64, ok int, p95 int64) result.Level {
		r := build(t, result.RunInfo{DurationS: 1, Model: "closed"}, stepSpec{scenario: "s", name: "GET /", okUS: spread(ok, p95/2, p95)})
		return result.Level{Vary: "users", Value: v, Result: r}
	}
	ins := LevelIndicators([]result.Level{lvl(100, 500, 50_000), lvl(400, 1000, 100_000), lvl(1000, 1040, 400_000)})
	if len(ins) != 1 || ins[0].ID != "saturated" || ins[0].Evidence["level_after"] != 1000 || ins[0].Evidence["ok_rps_after"] != 1040 {
		t.Fatalf("400 -> 1000 users at the same throughput: %v", ins)
	}
	if ins := LevelIndicators([]result.Level{lvl(100, 500, 50_000), lvl(200, 1000, 55_000)}); len(ins) != 0 {
		t.Errorf("throughput doubled with the users: %v", ins)
	}
	if ins := LevelIndicators([]result.Level{lvl(100, 500, 50_000)}); len(ins) != 0 {
		t.Errorf("one level: %v", ins)
	}
	if Headline(nil) != "-" || Headline([]result.Indicator{{ID: "closed_model", Severity: SeverityInfo}, {ID: "x", Severity: SeverityWarn}}) != "x" {
		t.Error("headline is the first warning")
	}
}
