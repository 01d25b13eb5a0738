// Package levels runs the real stampede binary's gates, sweep and
// capacity commands against the demo target and loopback servers, and
// checks the tables, exit codes and result files.
package levels

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/levels")) }

// writePlan also gives the plan's directory: the commands run there and
// write their results beside the plan.
func writePlan(t *testing.T, src string) (dir, path string) {
	t.Helper()
	path = e2etest.WritePlan(t, src, nil)
	return filepath.Dir(path), path
}

// The demo's database pool has 2 connections of 20ms each (100 queries/s)
// and gives up on a wait over 100ms with 503. One and two users fit; twelve
// users queue ten deep, wait over 100ms and get 503s: the third gate fails
// because the pool is exhausted, as a restaurant-ordering API's did at its
// 2,000-restaurant gate.
const gatesPlan = `name: pool-gates
target: demo
defaults: {timeout: 5s}
scenarios:
  voter:
    steps:
      - name: GET parties
        get: /elections/2026/parties
        expect: {status: 200}
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 1}
gates:
  vary: users
  levels: [1, 2, 12]
  ramp: 500ms
  hold: 1500ms
  slo: ["p95 < 150ms", "error_rate < 1%"]
`

func TestGatesThirdFailsOnPool(t *testing.T) {
	dir, plan := writePlan(t, gatesPlan)
	out := filepath.Join(dir, "gates.json")
	o := e2etest.Stampede(t, time.Minute, dir, "gates", plan, "-o", out, "--demo", "pool=2,service=20ms,wait=100ms", "-q")
	if o.Code != 1 {
		t.Fatalf("want exit 1 (a gate failed)\n%s", o)
	}
	lines := strings.Split(o.Stdout, "\n")
	if !strings.HasPrefix(lines[0], "users") || !strings.Contains(lines[0], "p95 < 150ms") || !strings.Contains(lines[0], "indicator") {
		t.Errorf("header %q", lines[0])
	}
	for i, want := range []string{"PASS", "PASS", "FAIL"} {
		if !strings.HasSuffix(strings.TrimSpace(lines[1+i]), want) {
			t.Errorf("row %d %q: want %s\n%s", i+1, lines[1+i], want, o)
		}
	}
	if !strings.Contains(lines[3], "✗ ") || !strings.Contains(o.Stdout, "Gate users 12 failed") {
		t.Errorf("the failing gate lacks its verdict\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 3 {
		t.Fatalf("%d levels in the result, want 3", len(res.Levels))
	}
	third := res.Levels[2]
	if third.Pass || third.Result.Totals.ByClass["server_error"] == 0 {
		t.Errorf("third level: pass %v, classes %v: want it failed by the pool's 503s", third.Pass, third.Result.Totals.ByClass)
	}
	// The top level describes the whole run: its counts are the levels'.
	var sum, failed int64
	for _, l := range res.Levels {
		sum += l.Result.Totals.Requests
		failed += l.Result.Totals.Failed
		if err := l.Result.Check(); err != nil {
			t.Errorf("level %g: %v", l.Value, err)
		}
	}
	if res.Totals.Requests != sum || res.Totals.Failed != failed {
		t.Errorf("top-level requests %d failed %d; levels sum to %d and %d", res.Totals.Requests, res.Totals.Failed, sum, failed)
	}
	if res.Run.MaxUsers != 12 {
		t.Errorf("max users %d, want 12 (levels run one after another)", res.Run.MaxUsers)
	}
	var gateVerdicts int
	for _, th := range res.Thresholds {
		if strings.HasPrefix(th.Expr, "users 12: ") && !th.Pass {
			gateVerdicts++
		}
	}
	if gateVerdicts == 0 {
		t.Errorf("thresholds %v: want the failing gate's verdicts named by level", res.Thresholds)
	}
}

func TestGatesBadSLOIsRejectedWithPlace(t *testing.T) {
	dir, plan := writePlan(t, strings.Replace(gatesPlan, `"p95 < 150ms"`, `"p95 < 150"`, 1))
	o := e2etest.Stampede(t, 30*time.Second, dir, "gates", plan)
	if o.Code != 2 || !strings.Contains(o.Stderr, "plan.yaml:19:9:") || !strings.Contains(o.Stderr, "expected a duration") {
		t.Errorf("want exit 2 naming the SLO's place\n%s", o)
	}
}

func TestSweepMarkdown(t *testing.T) {
	dir, plan := writePlan(t, gatesPlan)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, time.Minute, dir, "sweep", plan, "--users", "1,12", "--hold", "1s", "--ramp", "0s",
		"--format", "md", "-o", out, "--demo", "pool=2,service=20ms,wait=100ms", "-q")
	if o.Code != 1 {
		t.Fatalf("want exit 1 (the 12-user level misses the plan's gates.slo)\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	p95 := func(l result.Level) string {
		us := l.Result.Totals.LatencyOK.P95US
		// The table's three significant digits, recomputed independently.
		switch {
		case us >= 1e6:
			return fmt.Sprintf("%.3gs", float64(us)/1e6)
		case us >= 1e3:
			return trimG(float64(us)/1e3) + "ms"
		}
		return fmt.Sprint(us) + "µs"
	}
	fail := func(l result.Level) float64 {
		return float64(l.Result.Totals.Failed) / float64(l.Result.Totals.Requests) * 100
	}
	want := []string{"| Metric | 1 users | 12 |", "| --- | --- | --- |"}
	lines := strings.Split(strings.TrimSpace(o.Stdout), "\n")
	if lines[0] != want[0] || lines[1] != want[1] {
		t.Errorf("table head:\n%s", o.Stdout)
	}
	row := strings.Split(strings.Trim(lines[2], "| "), " | ")
	if row[0] != "P95" || row[1] != p95(res.Levels[0]) || row[2] != p95(res.Levels[1]) {
		t.Errorf("P95 row %q, levels say %s and %s", lines[2], p95(res.Levels[0]), p95(res.Levels[1]))
	}
	row = strings.Split(strings.Trim(lines[3], "| "), " | ")
	var got float64
	fmt.Sscanf(strings.TrimSuffix(row[2], "%"), "%g", &got)
	if row[0] != "Requests Failed" || row[1] != "0%" || math.Abs(got-fail(res.Levels[1])) > 0.005 {
		t.Errorf("failed row %q, level 2 failed %.4f%%", lines[3], fail(res.Levels[1]))
	}
}

func trimG(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if !strings.Contains(s, ".") && len(s) < 3 {
		s = fmt.Sprintf("%.*f", 3-len(s), v)
	}
	return s
}

func TestCapacityCommand(t *testing.T) {
	// Each answer takes 50ms: on a busy machine the generator's lag is
	// then small beside the latency, and the levels are not suspect (a
	// capacity bound by suspect levels is undetermined, exit 4).
	limited := &testserver.Limited{Rate: 150, Reject: http.StatusTooManyRequests}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		limited.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir, plan := writePlan(t, fmt.Sprintf(`name: limited
target: %s
scenarios:
  s:
    steps:
      - get: /
load:
  grace: 500ms
  stages:
    - {duration: 1s, users: 1}
`, srv.URL))
	out := filepath.Join(dir, "cap.json")
	o := e2etest.Stampede(t, time.Minute, dir, "capacity", plan, "--slo", "error_rate < 1%", "--start", "40",
		"--step-hold", "1500ms", "--budget", "30s", "-o", out, "-q")
	foundOrLagged(t, o)
	res := e2etest.ReadResult(t, out)
	var rate float64
	for _, in := range res.Indicators {
		if in.ID == "capacity" {
			rate = in.Evidence["capacity_rate"]
		}
	}
	if math.Abs(rate-150)/150 > 0.10 {
		t.Errorf("capacity %g, want 150 within 10%%\n%s", rate, o)
	}
	for _, want := range []string{"Capacity: ", "Knee: ", "Little's law at "} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("output lacks %q\n%s", want, o)
		}
	}
}
