package monitors

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
)

// The README's command: examples/monitors.yaml against the demo target
// backed by PostgreSQL. It passes its thresholds (two of them on monitor
// series), the summary ends with the server table, and the database
// password is printed nowhere.
func TestExampleWithPostgres(t *testing.T) {
	pg := testPG(t)
	out := filepath.Join(t.TempDir(), "monitors.json")
	args := []string{"run", "examples/monitors.yaml", "-q", "-o", out, "--demo", "db=" + pg + ",db_pool=4"}
	if os.Getenv("STAMPEDE_TEST_PG") != "" {
		// The plan names the .ci/services.sh database; point its monitor
		// (queries and all) where the tests' database is.
		args = append(args, "--monitor", "postgres="+pg)
	}
	o := stampede(t, 2*time.Minute, nil, args...)
	// The example's latency and error-rate thresholds measure this
	// machine as much as the demo: under stress-ng its 4-connection pool
	// timed out 7% of votes and p95 reached 537ms. What must hold at any
	// speed is the verdict agreeing with the thresholds it was drawn from
	// (checked below, once the result is read), and the monitor
	// thresholds passing.
	if o.Code != 0 && o.Code != 1 {
		t.Fatalf("want exit 0 (thresholds pass) or 1 (a threshold failed)\n%s", o)
	}
	// connections.active is not required here: with fast queries a 1 s
	// sample often finds no session mid-query, and an all-zero series is
	// left out of the table. The pool-exhaustion test shows it rising.
	for _, want := range []string{"Server Metrics (steady part ", "\n  postgres\n", "    connections.total ", "    xact.commits_per_sec ", "    query.votes ", "\n  host\n", "    cpu.busy_pct "} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("summary lacks %q\n%s", want, o)
		}
	}
	if strings.Contains(o.Stdout, "process[self]") {
		t.Errorf("the generator's own process belongs on the Generator line\n%s", o.Stdout)
	}
	if strings.Contains(o.Stderr+o.Stdout, ":stampede@") {
		t.Errorf("the demo database password was printed\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	failed := 0
	for _, th := range r.Thresholds {
		if !th.Pass {
			failed++
		}
	}
	if (failed > 0) != (o.Code == 1) {
		t.Fatalf("exit %d with %d failed thresholds: the exit code must say whether a threshold failed\n%s", o.Code, failed, o)
	}
	for _, k := range []string{"postgres.connections.active", "postgres.xact.commits_per_sec", "postgres.query.votes", "host.cpu.busy_pct", "process[self].cpu_pct"} {
		if len(r.Monitors[k].T) == 0 {
			t.Errorf("result has no %s series", k)
		}
	}
	for _, expr := range []string{"postgres.connections.active < 90", "postgres.connections.waiting_lock < 10"} {
		if th := threshold(t, r, expr); !th.Pass || !strings.HasPrefix(th.Value, "max ") {
			t.Errorf("threshold %+v, want a pass measured on the maximum", th)
		}
	}
	raw, _ := os.ReadFile(out)
	if !strings.Contains(string(raw), "${PGPASSWORD:-stampede}") {
		t.Error("the result's plan source should keep ${PGPASSWORD...} unexpanded")
	}
}

// The seeds' pool exhaustion, seen from the database: under load the demo
// holds all of its 4 connections active and commits hundreds of
// transactions a second, where before the load it held none. Thresholds on
// monitor series pass and fail on what was measured. The passing ">="
// threshold (judged on the minimum) is on the pool's open connections, not
// its active ones: on a busy machine one sample can fall in a moment when
// no query runs, while the pool stays open throughout.
func TestPostgresShowsPoolExhaustion(t *testing.T) {
	pg := testPG(t)
	voters := filepath.Join(e2etest.ModRoot, "examples", "voters.csv.gz")
	plan := writePlan(t, `
name: pg-pool
target: demo
defaults: {timeout: 5s}
data:
  voters: {file: `+voters+`, pick: unique}
scenarios:
  voter:
    steps:
      - name: POST vote
        post: /votes
        headers:
          voter-id: "{{ data.voters.voter_id }}"
          election-district-id: "{{ data.voters.district_id }}"
        json: {partyId: p1}
        expect: {status: 201}
      - name: GET count
        get: /votes/{{ data.voters.district_id }}/count
load:
  stages:
    - {duration: 3s, users: 0 -> 24, steps: 3}
    - {duration: 4s, users: 24}
monitors:
  - postgres: ${STAMPEDE_E2E_PG}
    name: demo
    required: true
    queries: {votes: "SELECT count(*) FROM stampede_demo_votes_noindex WHERE run <> 0"}
thresholds:
  - "postgres[demo].connections.active < 90"
  - "postgres[demo].connections.total >= 1"
  - "postgres[demo].xact.commits_per_sec > 1000000/s"
`)
	out := filepath.Join(t.TempDir(), "pool.json")
	// The data file is the example's, outside the plan's directory.
	o := stampede(t, 2*time.Minute, []string{"STAMPEDE_E2E_PG=" + pg}, "run", plan, "-q", "-o", out,
		"--allow-files", filepath.Dir(voters),
		"--demo", "db="+pg+",db_pool=4,missing_index=true,db_seed=20000")
	if o.Code != 1 {
		t.Fatalf("want exit 1 (one threshold fails)\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	if r.Run.Partial || r.Totals.Requests == 0 {
		t.Fatalf("want a complete run with requests: %+v", r.Run)
	}
	from, to := r.SteadyWindow()
	active := r.Monitors["postgres[demo].connections.active"]
	before, during := window(active, -5, 0), window(active, from, to)
	if len(before) == 0 || len(during) == 0 {
		t.Fatalf("active connections before the load %v, during %v: want samples of both (series %+v)", before, during, active)
	}
	if maxOf(during) < 3 || maxOf(during) <= before[0] {
		t.Errorf("active connections before the load %v, during %v: want them to rise to the pool size (4)", before, during)
	}
	commits := r.Monitors["postgres[demo].xact.commits_per_sec"]
	if got := maxOf(window(commits, from, to)); got < 50 {
		t.Errorf("commits per second during the load peaked at %v, want the votes' transactions (series %+v)", got, commits)
	}
	votes := r.Monitors["postgres[demo].query.votes"]
	if n := len(votes.V); n < 3 || votes.V[n-1] <= votes.V[0] {
		t.Errorf("query.votes should grow with the votes: %+v", votes)
	}
	for expr, pass := range map[string]bool{
		"postgres[demo].connections.active < 90":          true,
		"postgres[demo].connections.total >= 1":           true,
		"postgres[demo].xact.commits_per_sec > 1000000/s": false,
	} {
		th := threshold(t, r, expr)
		if th.Pass != pass || th.Error != "" {
			t.Errorf("threshold %+v, want pass=%v", th, pass)
		}
	}
	if !strings.Contains(o.Stdout, "✗ postgres[demo].xact.commits_per_sec > 1000000/s (measured min ") {
		t.Errorf("summary should show the failed monitor threshold with its value\n%s", o.Stdout)
	}
}

// A Redis server killed in the middle of the run: the monitor's failures
// are reported (once, folded), the load is not held up, and the run ends
// complete with a valid result.
func TestRedisKilledMidRun(t *testing.T) {
	addr, kill := redisServer(t)
	url, hits := target(t)
	plan := writePlan(t, `
target: `+url+`
scenarios: {s: {steps: [{get: /}, {think: 20ms}]}}
load: {stages: [{duration: 6s, users: 4}]}
thresholds: ["error_rate < 1%"]
`)
	out := filepath.Join(t.TempDir(), "redis.json")
	time.AfterFunc(3500*time.Millisecond, kill) // 1s lead, then 2.5s into the load
	o := stampede(t, time.Minute, nil, "run", plan, "-q", "-o", out, "--monitor", "redis="+addr)
	if o.Code != 0 {
		t.Fatalf("want exit 0: a dead monitor does not fail the run\n%s", o)
	}
	if o.Elapsed > 15*time.Second {
		t.Errorf("the run took %v: a dead monitor must not be waited on", o.Elapsed)
	}
	r := e2etest.ReadResult(t, out) // Read checks the result's invariants
	if r.Run.Partial || r.Totals.Requests == 0 || hits.Load() == 0 {
		t.Fatalf("want a complete run with requests: %+v, %d hits", r.Run, hits.Load())
	}
	clients := r.Monitors["redis.clients.connected"]
	if len(clients.T) == 0 || clients.T[len(clients.T)-1] > 4 {
		t.Errorf("redis.clients.connected should have samples only until the kill: %+v", clients)
	}
	var found bool
	for _, p := range r.MonitorProblems {
		if p.Monitor == "redis" && strings.HasPrefix(p.Message, "sample failed") && p.T > 1 && p.T < 5 {
			found = true
		}
	}
	if !found {
		t.Errorf("monitor_problems should report the redis failure soon after the kill: %+v", r.MonitorProblems)
	}
	if !strings.Contains(o.Stdout, "Monitor Problems:\n  ⚠ redis: sample failed") {
		t.Errorf("summary should list the monitor problem\n%s", o.Stdout)
	}
}

// Thresholds on monitor series pass and fail on what was measured, and
// one naming a series the run does not have fails with a hint.
func TestMonitorThresholds(t *testing.T) {
	url, _ := target(t)
	plan := writePlan(t, `
target: `+url+`
scenarios: {s: {steps: [{get: /}, {think: 50ms}]}}
load: {stages: [{duration: 3s, users: 2}]}
monitors: [host]
thresholds:
  - "host.mem.used_bytes > 1KiB"
  - "host.mem.used < 1KiB"
  - "process[self].rss < 1TiB"
  - "host.mem.usd_bytes < 1TiB"
`)
	out := filepath.Join(t.TempDir(), "thresholds.json")
	o := stampede(t, time.Minute, nil, "run", plan, "-q", "-o", out)
	if o.Code != 1 {
		t.Fatalf("want exit 1\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cases := []struct {
		expr, value, err string
		pass             bool
	}{
		{"host.mem.used_bytes > 1KiB", "min ", "", true},
		{"host.mem.used < 1KiB", "max ", "", false},
		{"process[self].rss < 1TiB", "max ", "", true},
		{"host.mem.usd_bytes < 1TiB", "", `did you mean "host.mem.used_bytes"?`, false},
	}
	for _, c := range cases {
		th := threshold(t, r, c.expr)
		if th.Pass != c.pass || !strings.HasPrefix(th.Value, c.value) || !strings.Contains(th.Error, c.err) {
			t.Errorf("threshold %+v, want pass=%v value %q… error %q", th, c.pass, c.value, c.err)
		}
	}
}

// A required monitor that cannot connect stops the run before any load,
// with exit 3 and a sentence that names it without its password; one that
// is not required is a warning and the run goes on.
func TestMonitorStartFailures(t *testing.T) {
	url, hits := target(t)
	dead := hostile.Refused(t)
	const secret = "hunter2-e2e-secret"
	env := []string{"STAMPEDE_E2E_PW=" + secret}
	plan := writePlan(t, `
target: `+url+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 1}]}
monitors:
  - postgres: postgres://app:${STAMPEDE_E2E_PW}@`+dead+`/app?sslmode=disable
    required: true
    timeout: 500ms
`)
	o := stampede(t, time.Minute, env, "run", plan, "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
	if o.Code != 3 || !strings.Contains(o.Stderr, "a required monitor could not start, so no load was sent") ||
		!strings.Contains(o.Stderr, "cannot start postgres postgres://app:xxxxx@127.0.0.1:") {
		t.Errorf("want exit 3 naming the monitor\n%s", o)
	}
	if strings.Contains(o.Stdout+o.Stderr, secret) {
		t.Errorf("the password from the environment was printed\n%s", o)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests reached the target; none may before the monitors start", n)
	}
	// Split over workers, segment 0 watches the servers, but every segment
	// checks the required monitor: none sends load without it.
	wplan := writePlan(t, `
target: `+url+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 4}]}
monitors:
  - postgres: postgres://app:${STAMPEDE_E2E_PW}@`+dead+`/app?sslmode=disable
    required: true
    timeout: 500ms
`)
	o = stampede(t, time.Minute, env, "run", wplan, "-q", "--workers", "2", "-o", filepath.Join(t.TempDir(), "w.json"))
	if o.Code != 3 || strings.Count(o.Stderr, "a required monitor could not start") < 2 {
		t.Errorf("--workers 2: want exit 3 with both segments refusing\n%s", o)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("--workers 2: %d requests reached the target without the required monitor", n)
	}
	if strings.Contains(o.Stdout+o.Stderr, secret) {
		t.Errorf("--workers 2: the password from the environment was printed\n%s", o)
	}

	// Not required: a warning on stderr, the run completes, the problem is
	// in the result.
	out := filepath.Join(t.TempDir(), "warn.json")
	plan2 := writePlan(t, "target: "+url+"\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n")
	o = stampede(t, time.Minute, nil, "run", plan2, "-q", "-o", out, "--monitor", "redis="+dead, "--monitor", "host")
	if o.Code != 0 || !strings.Contains(o.Stderr, "stampede: warning: cannot start redis 127.0.0.1:") {
		t.Fatalf("want exit 0 with a warning\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	if len(r.MonitorProblems) == 0 || r.MonitorProblems[0].Monitor != "redis" || len(r.Monitors["host.mem.used_bytes"].T) == 0 {
		t.Errorf("want the redis problem and the host series: %+v", r.MonitorProblems)
	}
}

// Bad monitors are usage errors (exit 2) before anything runs, with the
// place in the plan or the flag, and a hint.
func TestMonitorUsageErrors(t *testing.T) {
	url, _ := target(t)
	base := "target: " + url + "\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	cases := []struct {
		plan string
		args []string
		want string
	}{
		{base + "monitors: [{postgress: 'postgres://h/db'}]\n", nil, `plan.yaml:4:13: unknown key "postgress" in monitor: did you mean "postgres"?`},
		{base + "monitors:\n  - prometheus: 'ftp://h/metrics'\n", nil, `plan.yaml:5:5: monitor prometheus: target "ftp://h/metrics" is not an http(s) URL`},
		{base, []string{"--monitor", "postgress=postgres://h/db"}, `--monitor postgress=postgres://h/db: monitor: unknown kind "postgress"`},
		{base, []string{"--monitor", "postgres=postgres://u:${STAMPEDE_E2E_UNSET}@h/db"}, "environment variable STAMPEDE_E2E_UNSET is not set"},
		{base, []string{"--monitor", "process=self"}, "always recorded as process[self]"},
		{base + `thresholds: ["postgres.connections.active == 3"]` + "\n", nil, "not =="},
	}
	for _, c := range cases {
		args := append([]string{"run", writePlan(t, c.plan), "-q", "-o", filepath.Join(t.TempDir(), "x.json")}, c.args...)
		o := stampede(t, time.Minute, nil, args...)
		if o.Code != 2 || !strings.Contains(o.Stderr, c.want) {
			t.Errorf("%v: want exit 2 with %q\n%s", c.args, c.want, o)
		}
	}
}
