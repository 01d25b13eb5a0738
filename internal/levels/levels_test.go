package levels

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/testserver"
)

// These tests drive real runs against loopback servers, so each level is
// kept to 1-2 s: they check behaviour (what fires, what is found), never
// timings.

func startDemo(t *testing.T, opts string) string {
	t.Helper()
	o, err := demo.ParseOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := demo.Start(context.Background(), "", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	return url
}

func mustPlan(t *testing.T, src string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse("test.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// getPlan is one GET per iteration; load is set per test.
func getPlan(target, path, extra, load string) string {
	return fmt.Sprintf(`name: t
target: %s
%s
scenarios:
  s:
    steps:
      - name: GET
        get: %s
load:
  grace: 1s
  stages:
%s
`, target, extra, path, load)
}

func ids(ins []result.Indicator) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.ID)
	}
	return out
}

func has(ins []result.Indicator, id string) (result.Indicator, bool) {
	for _, in := range ins {
		if in.ID == id {
			return in, true
		}
	}
	return result.Indicator{}, false
}

func runOnce(t *testing.T, p *plan.Plan, interval time.Duration) *result.Result {
	t.Helper()
	res, err := run.Run(context.Background(), p, run.Options{Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	Judge(res, p, nil)
	return res
}

func TestCapacityFindsKnownCapacity(t *testing.T) {
	const capacity = 200.0
	srv := httptest.NewServer(&testserver.Limited{Rate: capacity, Reject: http.StatusServiceUnavailable})
	defer srv.Close()
	// A closed plan: the search runs it as an open model at each rate.
	p := mustPlan(t, getPlan(srv.URL, "/", "", "    - {duration: 1s, users: 1}"))
	p.Load.Grace = 500 * time.Millisecond
	c, err := SearchCapacity(context.Background(), p, CapacityOptions{
		Start: 50, Max: 2000, Budget: 40 * time.Second,
		Options: Options{Judge: judgeLevel, Hold: 1500 * time.Millisecond, SLO: []string{"error_rate < 1%"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Arrivals a lagging generator sends in bursts overflow the server's
	// tenth-of-a-second burst below its rate, so a busy machine finds less
	// capacity than there is, never more; the search is held to 10% only
	// where no level says its generator lagged (Level.Suspect).
	var suspect []string
	for _, l := range c.Result.Levels {
		if l.Suspect != "" {
			suspect = append(suspect, FormatLevel(l.Vary, l.Value)+": "+l.Suspect)
		}
	}
	if c.Rate > capacity*1.1 || c.Rate <= 0 || c.FailedAt <= c.Rate {
		t.Fatalf("capacity %g, failed at %g (%s): want a bracket at or under the server's %g/s", c.Rate, c.FailedAt, c.Stopped, capacity)
	}
	if len(suspect) > 0 {
		t.Logf("the generator lagged, so the capacity found (%g/s) is only held to be at most %g/s: %v", c.Rate, capacity, suspect)
	} else {
		if math.Abs(c.Rate-capacity)/capacity > 0.10 {
			t.Fatalf("capacity %g, want %g within 10%% (failed at %g, %s)", c.Rate, capacity, c.FailedAt, c.Stopped)
		}
		if !c.KneeFound || c.Knee.AtRate <= capacity*0.95 || c.Knee.FollowedRatio >= followedBelow {
			t.Errorf("knee %+v (found %v): want the first rate over capacity, where throughput stopped following", c.Knee, c.KneeFound)
		}
	}

	if c.Little.RPS <= 0 || c.Little.ClosedUsers <= 0 {
		t.Errorf("Little's law check missing: %+v", c.Little)
	}
	if len(c.Result.Levels) < 4 || c.Result.Levels[0].Value != 50 {
		t.Errorf("levels %v: want the geometric climb from 50 then bisection", levelValues(c.Result.Levels))
	}
	var out bytes.Buffer
	if err := WriteCapacity(&out, c, []string{"error_rate < 1%"}); err != nil {
		t.Fatal(err)
	}
	wants := []string{"Capacity: ", "Knee: ", "Little's law at"}
	if len(suspect) == 0 {
		// A suspect level is never the knee nor its base: where the
		// generator lagged, the knee line says what it left out instead.
		wants[1] = "Knee: throughput followed the offered rate up to"
	}
	for _, want := range wants {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The knee rule on made-up levels: a p95 that doubles from a tiny
// baseline (what scheduling noise on a loaded machine does) is no knee
// unless it reaches half a latency SLO's bound; throughput that stops
// following always is one.
func TestFindKneeLatencyNeedsSLO(t *testing.T) {
	level := func(rate, achieved float64, p95 time.Duration, slo ...string) result.Level {
		r := &result.Result{}
		r.Run.DurationS = 2
		r.Totals.Requests = int64(achieved * 2)
		r.Totals.Successful = r.Totals.Requests
		r.Totals.Iterations = r.Totals.Requests
		r.Totals.LatencyOK.P95US = p95.Microseconds()
		l := result.Level{Vary: "rate", Value: rate, Pass: true, Result: r}
		for _, e := range slo {
			l.SLO = append(l.SLO, result.Threshold{Expr: e, Pass: true})
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		slo    []string
		p95s   [3]time.Duration // at 50, 100 and 200/s, all followed
		wantAt float64          // 0: no latency knee; 400 is then the knee
	}{
		{"noise without a latency SLO", []string{"error_rate < 1%"}, [3]time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 8 * time.Millisecond}, 0},
		{"real rise without a latency SLO", []string{"error_rate < 1%"}, [3]time.Duration{2 * time.Millisecond, 40 * time.Millisecond, 300 * time.Millisecond}, 0},
		{"noise under a latency SLO", []string{"error_rate < 1%", "p95 < 500ms"}, [3]time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 8 * time.Millisecond}, 0},
		{"half the SLO", []string{"p95 < 500ms", "GET: p99 < 2s"}, [3]time.Duration{2 * time.Millisecond, 40 * time.Millisecond, 300 * time.Millisecond}, 200},
		{"tightest bound", []string{"p99 < 2s", "p95 <= 60ms"}, [3]time.Duration{2 * time.Millisecond, 40 * time.Millisecond, 300 * time.Millisecond}, 100},
		{"half the SLO but not double", []string{"p95 < 20ms"}, [3]time.Duration{8 * time.Millisecond, 10 * time.Millisecond, 12 * time.Millisecond}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := []result.Level{
				level(50, 50, tc.p95s[0], tc.slo...),
				level(400, 210, tc.p95s[2], tc.slo...), // out of order, as bisection runs them
				level(100, 100, tc.p95s[1], tc.slo...),
				level(200, 199, tc.p95s[2], tc.slo...),
			}
			k, found := FindKnee(ls)
			want := tc.wantAt
			if want == 0 {
				want = 400
			}
			if !found || k.AtRate != want {
				t.Fatalf("knee %+v (found %v), want at %g/s", k, found, want)
			}
			if latency := strings.HasPrefix(k.Reason, "p95 rose"); latency != (tc.wantAt != 0) {
				t.Errorf("reason %q", k.Reason)
			}
		})
	}
}

func levelValues(ls []result.Level) []float64 {
	var out []float64
	for _, l := range ls {
		out = append(out, l.Value)
	}
	return out
}

func TestSweepTableMatchesLevelResults(t *testing.T) {
	url := startDemo(t, "pool=2,service=10ms,wait=30ms")
	p := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 1s, users: 1}"))
	out, err := Run(context.Background(), p, plan.VaryUsers, []float64{1, 12}, Options{Judge: judgeLevel, Hold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ls := out.Result.Levels
	if len(ls) != 2 {
		t.Fatalf("%d levels, want 2 (a sweep runs every level)", len(ls))
	}
	header, rows := SweepTable(ls)
	if want := []string{"Metric", "1 users", "12"}; strings.Join(header, "|") != strings.Join(want, "|") {
		t.Errorf("header %q, want %q", header, want)
	}
	for i, l := range ls {
		r := l.Result
		if got, want := rows[0].Cells[i].Value, float64(r.Totals.LatencyOK.P95US); got != want {
			t.Errorf("level %g: P95 cell %g, result %g", l.Value, got, want)
		}
		if rows[0].Cells[i].Text != Short3(r.Totals.LatencyOK.P95US) {
			t.Errorf("level %g: P95 text %q", l.Value, rows[0].Cells[i].Text)
		}
		want := float64(r.Totals.Failed) / float64(r.Totals.Requests)
		if got := rows[1].Cells[i].Value; got != want {
			t.Errorf("level %g: failed cell %g, result %g", l.Value, got, want)
		}
	}
	// The second level overloads a 2-connection pool with a 30ms wait, so
	// the table shows failures there and none at one user.
	if rows[1].Cells[0].Text != "0%" || rows[1].Cells[1].Value == 0 {
		t.Errorf("failed row %+v: want 0%% then failures", rows[1].Cells)
	}
	// The whole run's totals are the levels' sums.
	var sum int64
	for _, l := range ls {
		sum += l.Result.Totals.Requests
	}
	if out.Result.Totals.Requests != sum {
		t.Errorf("top-level requests %d, levels sum to %d", out.Result.Totals.Requests, sum)
	}
	var md bytes.Buffer
	if err := WriteSweep(&md, ls, "md"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md.String(), "| Metric | 1 users | 12 |\n| --- | --- | --- |\n| P95 | ") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// The ramp is run but not measured: a level of 100 arrivals/s after a 1s
// ramp from zero is measured from when the ramp is over, for at least its
// hold. Nothing here depends on the machine being prompt: a busy machine
// only starts the measured part later and makes it longer, and the figures
// are checked against what the level itself recorded.
func TestRampIsNotMeasured(t *testing.T) {
	url := startDemo(t, "")
	p := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 1s, rate: 1/s}"))
	out, err := Run(context.Background(), p, plan.VaryRate, []float64{100}, Options{Judge: judgeLevel, Ramp: time.Second, Hold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l := out.Result.Levels[0]
	r := l.Result
	if l.RampS < 1 || l.RampPlannedS != 1 || l.NotInPlace != "" {
		t.Errorf("ramp took %.3fs of a planned %.3fs (%q): the measured part cannot start before the ramp ends", l.RampS, l.RampPlannedS, l.NotInPlace)
	}
	if r.Run.DurationS < 1 {
		t.Errorf("measured %.3fs: the hold counts from the cut, so at least its 1s", r.Run.DurationS)
	}
	// The level's figures run from the cut to the snapshot that ended the
	// hold, and its times say exactly that window.
	if got := r.Run.Ended.Sub(r.Run.Started).Seconds(); math.Abs(got-r.Run.DurationS) > 1e-3 {
		t.Errorf("measured %.6fs, but %.6fs between %v and %v", r.Run.DurationS, got, r.Run.Started, r.Run.Ended)
	}
	if r.Totals.Requests == 0 || len(r.Series.T) == 0 || r.Series.T[0] != 0 {
		t.Fatalf("%d requests, series t %v: want the hold's intervals from 0", r.Totals.Requests, r.Series.T)
	}
	// Every interval kept began at or after the ramp's end, where the
	// offered rate is the level's.
	if len(r.Series.Target) != len(r.Series.T) {
		t.Errorf("%d targets for %d intervals", len(r.Series.Target), len(r.Series.T))
	}
	for i, target := range r.Series.Target {
		if target != 100 {
			t.Errorf("interval %d offered %g/s: a ramp interval was measured (targets %v)", i, target, r.Series.Target)
			break
		}
	}
	if err := r.Check(); err != nil {
		t.Error(err)
	}
}

func TestGatesStopAtFirstFailure(t *testing.T) {
	url := startDemo(t, "pool=2,service=10ms,wait=30ms")
	p := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 1s, users: 1}"))
	out, err := Run(context.Background(), p, plan.VaryUsers, []float64{1, 12, 2}, Options{
		Hold: time.Second, SLO: []string{"error_rate < 1%"}, StopAtFail: true, Judge: judgeLevel,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed != 1 || len(out.Result.Levels) != 2 {
		t.Fatalf("failed at %d with %d levels: want the second level to fail and the third not to run", out.Failed, len(out.Result.Levels))
	}
	if !out.Result.Levels[0].Pass || out.Result.Levels[1].Pass {
		t.Errorf("verdicts %v, %v", out.Result.Levels[0].Pass, out.Result.Levels[1].Pass)
	}
	var buf bytes.Buffer
	if err := WriteGates(&buf, "users", []float64{1, 12, 2}, []string{"error_rate < 1%"}, out.Result.Levels, "text"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[1], "PASS") || !strings.HasSuffix(lines[2], "FAIL") || !strings.HasSuffix(lines[3], "not run") {
		t.Errorf("table:\n%s", buf.String())
	}
	if !strings.Contains(lines[2], "✗ ") || !strings.Contains(lines[2], "overloaded") {
		t.Errorf("failing row lacks its verdict or headline: %q", lines[2])
	}
}

// Each indicator: one run that triggers it for a real reason, and a healthy
// run where it stays quiet.
func TestIndicatorsHonest(t *testing.T) {
	t.Run("saturated across levels", func(t *testing.T) {
		url := startDemo(t, "pool=2,service=10ms,wait=10s")
		p := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 1s, users: 1}"))
		// 2 connections of 10ms serve 200 req/s: 4 and 16 users both get
		// that, the 16 only wait longer.
		out, err := Run(context.Background(), p, plan.VaryUsers, []float64{4, 16}, Options{Judge: judgeLevel, Hold: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		in, ok := has(out.Result.Indicators, "saturated")
		if !ok {
			t.Fatalf("indicators %v: want saturated", ids(out.Result.Indicators))
		}
		if in.Evidence["level_after"] != 16 || in.Evidence["p95_after_us"] <= in.Evidence["p95_before_us"] {
			t.Errorf("evidence %v", in.Evidence)
		}
		healthy, err := Run(context.Background(), p, plan.VaryUsers, []float64{1, 2}, Options{Judge: judgeLevel, Hold: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := has(healthy.Result.Indicators, "saturated"); ok {
			t.Errorf("saturated fired on 1 then 2 users of a 2-connection pool: %v", healthy.Result.Indicators)
		}
	})
	t.Run("saturated within a run", func(t *testing.T) {
		// 2 connections held 100ms each serve 20 req/s, a rate bound by
		// the pool's sleeps rather than CPU, so a loaded CI machine (whose
		// scheduler delays a wake-up by tens of ms) moves it little; a
		// 10ms pool's 200 req/s dipped 20% there. Users rise 20-fold from
		// the pool's size, so every interval is saturated and p95 climbs.
		// The drain after the stage (slow to empty on a busy machine) is
		// not judged (gate's TestSaturatedIgnoresTheDrain).
		url := startDemo(t, "pool=2,service=100ms,wait=10s")
		ramp := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 4s, users: 2 -> 40}"))
		res := runOnce(t, ramp, 250*time.Millisecond)
		if in, ok := has(res.Indicators, "saturated"); !ok {
			t.Errorf("users 2 -> 40 on a 20 req/s pool: indicators %v, want saturated (ok %v, p95 %v, in flight %v, measured %.2fs)", ids(res.Indicators), res.Series.OK, res.Series.P95US, res.Series.InFlight, res.Run.DurationS)
		} else if in.Evidence["ok_rps_last"] > 22 || in.Evidence["p95_last_us"] < 2*in.Evidence["p95_first_us"] {
			t.Errorf("evidence %v: want the pool's 20 req/s and p95 at least doubled", in.Evidence)
		}
		steady := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 2s, users: 2}"))
		res = runOnce(t, steady, 250*time.Millisecond)
		if _, ok := has(res.Indicators, "saturated"); ok {
			t.Errorf("2 steady users fired saturated: %v", res.Indicators)
		}
	})
	t.Run("timeouts clustered at the timeout", func(t *testing.T) {
		url := startDemo(t, "pool=1,service=20ms,wait=10s")
		extra := "defaults: {timeout: 100ms}"
		// 20 users queue behind one 20ms connection: each waits ~400ms, so
		// they time out at 100ms, all at once.
		queued := mustPlan(t, getPlan(url, "/elections/1/parties", extra, "    - {duration: 1500ms, users: 20}"))
		res := runOnce(t, queued, time.Second)
		in, ok := has(res.Indicators, "timeouts_clustered")
		if !ok {
			t.Fatalf("indicators %v, want timeouts_clustered", ids(res.Indicators))
		}
		if in.Evidence["timeout_us"] != 100_000 || in.Evidence["at_timeout"] < clusterMin {
			t.Errorf("evidence %v", in.Evidence)
		}
		one := mustPlan(t, getPlan(url, "/elections/1/parties", extra, "    - {duration: 1s, users: 1}"))
		res = runOnce(t, one, time.Second)
		if _, ok := has(res.Indicators, "timeouts_clustered"); ok {
			t.Errorf("one user fired timeouts_clustered: %v", res.Indicators)
		}
	})
	t.Run("errors dominated by one class", func(t *testing.T) {
		url := startDemo(t, "error_rate=0.5")
		p := mustPlan(t, getPlan(url, "/elections/1/parties", "", "    - {duration: 1s, users: 2}"))
		res := runOnce(t, p, time.Second)
		in, ok := has(res.Indicators, "errors_dominated")
		if !ok || in.Evidence["server_error"] == 0 || !strings.Contains(in.Message, "server_error") {
			t.Fatalf("indicators %v: want errors_dominated naming server_error", res.Indicators)
		}
		healthy := startDemo(t, "")
		p = mustPlan(t, getPlan(healthy, "/elections/1/parties", "", "    - {duration: 1s, users: 2}"))
		res = runOnce(t, p, time.Second)
		if _, ok := has(res.Indicators, "errors_dominated"); ok {
			t.Errorf("healthy run fired errors_dominated: %v", res.Indicators)
		}
	})
}

// clusterMin is the fewest requests at the timeout the 20-user run shows.
const clusterMin = 5

// A level whose run ends during its ramp (here its only unique row is
// spent at once) never had its population in place: it has no measured
// part, says so and fails. It is not an interruption, and no figure of it
// may come from a cut taken after the run stopped (a 2,000-restaurant gate
// once reported a duration of -13.3s that way).
func TestLevelThatEndsDuringItsRamp(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	csv := dir + "/ids.csv"
	if err := os.WriteFile(csv, []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plan sits beside its data file: plans read files only there.
	p, err := plan.Parse(dir+"/test.yaml", []byte(getPlan(srv.URL, "/{{ data.ids.id }}", "data:\n  ids: {file: ids.csv, pick: unique}", "    - {duration: 1s, users: 1}")), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), p, plan.VaryUsers, []float64{10}, Options{Judge: judgeLevel, Ramp: 5 * time.Second, Hold: time.Second, SLO: []string{"error_rate < 1%"}, StopAtFail: true})
	if err != nil {
		t.Fatal(err)
	}
	l := out.Result.Levels[0]
	r := l.Result
	if out.Interrupted || r.Run.Partial || l.Pass || l.NotInPlace == "" || out.Failed != 0 {
		t.Fatalf("interrupted %v, partial %v (%q), pass %v, not in place %q: want a failed level that says its population never came", out.Interrupted, r.Run.Partial, r.Run.PartialReason, l.Pass, l.NotInPlace)
	}
	if r.Run.DurationS != 0 || r.Totals.Requests != 0 {
		t.Errorf("measured %.3fs, %d requests: a level never in place has no measured part", r.Run.DurationS, r.Totals.Requests)
	}
	var buf bytes.Buffer
	if err := WriteGates(&buf, "users", []float64{10}, []string{"error_rate < 1%"}, out.Result.Levels, "text"); err != nil {
		t.Fatal(err)
	}
	row := strings.Fields(strings.Split(strings.TrimSpace(buf.String()), "\n")[1])
	if row[1] != "-" || row[len(row)-1] != "FAIL" || !strings.Contains(buf.String(), "not in place") {
		t.Errorf("table:\n%s\nwant no req/s, the ramp not in place, FAIL", buf.String())
	}
}
