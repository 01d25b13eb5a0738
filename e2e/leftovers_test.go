package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/metrics"
)

// validate resolves data files as run does: a plan whose data lives in
// --data-dir (a volume a pod mounts) validates with the same flag, and the
// data's checks (rows enough for a unique pick) are made on that file.
// Before, validate had no --data-dir: such a plan could only be refused.
func TestValidateDataDir(t *testing.T) {
	t.Parallel()
	plan := e2etest.WritePlan(t, fmt.Sprintf(shareDataPlan, "http://127.0.0.1:1"), nil)
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "voters.csv"), []byte(votersCSV(10)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := e2etest.Stampede(t, 60*time.Second, "", "validate", plan); o.Code != 2 || !strings.Contains(o.Stderr, "voters.csv") {
		t.Fatalf("without --data-dir: want exit 2 naming the missing voters.csv:\n%s", o)
	}
	o := e2etest.Stampede(t, 60*time.Second, "", "validate", plan, "--data-dir", data)
	if o.Code != 0 || !strings.Contains(o.Stdout, ": ok") {
		t.Fatalf("with --data-dir: want exit 0, ok:\n%s", o)
	}
	// The file there is checked, not just found: a header alone has no
	// rows for a unique pick.
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "voters.csv"), []byte("id,district\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := e2etest.Stampede(t, 60*time.Second, "", "validate", plan, "--data-dir", empty); o.Code != 2 {
		t.Fatalf("with an empty voters.csv in --data-dir: want exit 2:\n%s", o)
	}
}

// With --workers, --keep-failures gives what one process gives: one
// RESULT.failures.jsonl beside the merged result, up to N samples per step
// for the whole test (not N per worker), named on stderr. Before, each
// worker left its own file in the .segments directory and the merged
// result had none.
func TestWorkersKeepFailuresMerged(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			w.WriteHeader(http.StatusInternalServerError)
		case "/b":
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`name: keep-workers
target: %s
scenarios:
  sa:
    steps:
      - {name: ok, get: /ok}
      - {name: a, get: /a}
      - think: 50ms
  sb:
    steps:
      - {name: b, get: /b, expect: {status: 200}}
      - think: 50ms
load:
  stages: [{duration: 2s, users: 4}]
`, srv.URL), nil)
	out := filepath.Join(filepath.Dir(planPath), "r.json")
	o := e2etest.Stampede(t, 120*time.Second, "", "run", planPath, "--workers", "2", "--keep-failures", "3", "-q", "-o", out)
	if o.Code == 3 || o.Code == 2 {
		t.Fatalf("run --workers --keep-failures: %s", o)
	}
	res := e2etest.ReadResult(t, out)
	path := filepath.Join(filepath.Dir(planPath), "r.failures.jsonl")
	if !strings.Contains(o.Stderr, path) {
		t.Errorf("stderr does not name %s:\n%s", path, o.Stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no merged failure samples: %v\n%s", err, o.Stderr)
	}
	perStep := map[string]int{}
	var lines int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var x struct {
			Step      string `json:"step"`
			StepIndex int    `json:"step_index"`
			Class     string `json:"class"`
		}
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if res.Steps[x.StepIndex].Name != x.Step {
			t.Errorf("line of step %q has step_index %d, the result's step %q", x.Step, x.StepIndex, res.Steps[x.StepIndex].Name)
		}
		perStep[x.Step]++
		lines++
	}
	for _, s := range []string{"a", "b"} {
		if f := stepOf(t, res, "s"+s, s).Failed; f < 3 {
			t.Fatalf("step %s failed %d times; the test needs 3 or more", s, f)
		}
		if perStep[s] != 3 {
			t.Errorf("step %s: %d samples, want 3 for the whole test (--keep-failures 3)", s, perStep[s])
		}
	}
	if lines != 6 || perStep["ok"] != 0 {
		t.Errorf("%d samples %v, want 3 of a and 3 of b", lines, perStep)
	}
	if !strings.Contains(o.Stderr, "6 failure samples saved to "+path) {
		t.Errorf("stderr does not say how many samples the file holds:\n%s", o.Stderr)
	}
}

// phaseServer answers every path at once but /setup and /teardown, which
// it holds until released, and /fail, which it fails with a 500.
type phaseServer struct {
	srv     *httptest.Server
	entered map[string]chan struct{}
	release chan struct{}
	rel     sync.Once
}

func newPhaseServer(t *testing.T) *phaseServer {
	ps := &phaseServer{entered: map[string]chan struct{}{"/setup": make(chan struct{}), "/teardown": make(chan struct{})},
		release: make(chan struct{})}
	once := map[string]*sync.Once{"/setup": {}, "/teardown": {}}
	ps.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		ch, held := ps.entered[r.URL.Path]
		if !held {
			return
		}
		once[r.URL.Path].Do(func() { close(ch) })
		select {
		case <-r.Context().Done():
		case <-ps.release:
		case <-time.After(60 * time.Second):
		}
	}))
	t.Cleanup(func() { ps.Release(); ps.srv.Close() })
	return ps
}

func (ps *phaseServer) Release() { ps.rel.Do(func() { close(ps.release) }) }

func (ps *phaseServer) await(t *testing.T, path string, p *e2etest.Proc) {
	t.Helper()
	select {
	case <-ps.entered[path]:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s never reached\n%s", path, p.Stderr())
	}
}

// awaitStderr waits (bounded) until the process's stderr holds s.
func awaitStderr(t *testing.T, p *e2etest.Proc, s string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.Stderr(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stderr never said %q:\n%s", s, p.Stderr())
		}
	}
}

// The first Ctrl-C during the teardown says that the teardown goes on
// (bounded) and that a second one cuts it off, and the teardown does go
// on to its end; during the setup it says the setup is cut off and no
// load is sent. Before, both printed the load's "requests in flight get
// the grace period", which is not what happens in either.
func TestCtrlCNoteInSetupAndTeardown(t *testing.T) {
	t.Parallel()
	for _, workers := range []bool{false, true} {
		t.Run(fmt.Sprintf("teardown workers=%v", workers), func(t *testing.T) {
			t.Parallel()
			ps := newPhaseServer(t)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: note-teardown
target: %s
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 20ms
load:
  stages: [{duration: 1s, users: 2}]
`, ps.srv.URL), nil)
			out := filepath.Join(t.TempDir(), "r.json")
			args := []string{"run", plan, "-o", out}
			if workers {
				args = append(args, "--workers", "2")
			}
			p := e2etest.Start(t, "", nil, args...)
			ps.await(t, "/teardown", p)
			p.Signal(t, os.Interrupt)
			awaitStderr(t, p, "the teardown goes on")
			ps.Release()
			o := p.Wait(t, 60*time.Second)
			if o.Code != 0 {
				t.Fatalf("want exit 0: the load was whole and the teardown finished:\n%s", o)
			}
			if strings.Contains(o.Stderr, "grace period") {
				t.Errorf("stderr promises the load's grace period during the teardown:\n%s", o.Stderr)
			}
			if !strings.Contains(o.Stderr, "Ctrl-C again to quit now and cut it off") {
				t.Errorf("stderr does not say what a second Ctrl-C does:\n%s", o.Stderr)
			}
			res := e2etest.ReadResult(t, out)
			if res.Workflow == nil || res.Workflow.Teardown == nil || res.Workflow.Teardown.Error != "" || res.Workflow.Teardown.Requests != 1 {
				t.Errorf("workflow %+v: want the teardown's one request, finished", res.Workflow)
			}
		})
	}
	t.Run("setup", func(t *testing.T) {
		t.Parallel()
		ps := newPhaseServer(t)
		plan := e2etest.WritePlan(t, fmt.Sprintf(`name: note-setup
target: %s
setup:
  - {name: make, post: /setup}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
load:
  stages: [{duration: 1s, users: 2}]
`, ps.srv.URL), nil)
		p := e2etest.Start(t, "", nil, "run", plan, "-o", filepath.Join(t.TempDir(), "r.json"))
		ps.await(t, "/setup", p)
		p.Signal(t, os.Interrupt)
		o := p.Wait(t, 60*time.Second)
		if o.Code != 3 || !strings.Contains(o.Stderr, "the setup is cut off and no load will be sent") || strings.Contains(o.Stderr, "grace period") {
			t.Errorf("want exit 3 and the setup's note, not the load's:\n%s", o)
		}
	})
}

// A setup that overruns the start time given with --start-at keeps that
// instant (other segments may share it), so the load joins its schedule
// late and the profile's first part is not sent: the result says how late
// (run.late_start_s) with a late_start warning, and with --workers the
// coordinator says so on stderr as the workers start. Before, nothing
// did: the result looked like a whole profile that sent less.
func TestSetupOverrunningStartAtIsVisible(t *testing.T) {
	t.Parallel()
	for _, workers := range []bool{false, true} {
		t.Run(fmt.Sprintf("workers=%v", workers), func(t *testing.T) {
			t.Parallel()
			start := time.Now().Add(500 * time.Millisecond)
			// The setup answers only a second after the start time: it
			// overruns it by that much at least, however slow the machine.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/setup" {
					time.Sleep(time.Until(start.Add(time.Second)))
				}
			}))
			t.Cleanup(srv.Close)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: overrun
target: %s
setup:
  - {name: make, post: /setup}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 50ms
load:
  stages: [{duration: 3s, users: 2}]
`, srv.URL), nil)
			out := filepath.Join(t.TempDir(), "r.json")
			args := []string{"run", plan, "-o", out, "-q", "--start-at", start.UTC().Format(time.RFC3339Nano), "--start-grace", "60s"}
			if workers {
				args = append(args, "--workers", "2")
			}
			o := e2etest.Stampede(t, 120*time.Second, "", args...)
			if o.Code != 0 {
				t.Fatalf("want exit 0:\n%s", o)
			}
			res := e2etest.ReadResult(t, out)
			if res.Run.LateStartS < 1 {
				t.Errorf("run.late_start_s %v, want at least 1: the setup overran the start by a second", res.Run.LateStartS)
			}
			var warned bool
			for _, in := range res.Indicators {
				warned = warned || (in.ID == "late_start" && in.Severity == "warn" && in.Evidence["late_start_s"] == res.Run.LateStartS)
			}
			if !warned {
				t.Errorf("indicators %+v: want a late_start warning with its figure", res.Indicators)
			}
			if workers && !strings.Contains(o.Stderr, "warning: the setup ended") {
				t.Errorf("the coordinator did not warn on stderr:\n%s", o.Stderr)
			}
			// Throughput is over the time the load ran, not over the part
			// of the profile nothing was sent in (before: the whole 3s).
			if ran := 3 - res.Run.LateStartS; res.Run.DurationS > ran+0.5 {
				t.Errorf("duration_s %v: want the time the load ran, about %vs", res.Run.DurationS, ran)
			}
		})
	}
}

// A script that calls fail() fails the request step after it as a check,
// with nothing sent: the result counts it in the step's failures and the
// error rate, but adds no latency sample (before, a 0 µs one each, which
// pulled latency_all's percentiles down).
func TestScriptFailureAddsNoLatency(t *testing.T) {
	t.Parallel()
	var sentB atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" {
			sentB.Add(1)
		}
		time.Sleep(2 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: unsent
target: %s
scenarios:
  s:
    steps:
      - {name: a, get: /a}
      - name: judge
        script: fail("not this time")
      - {name: b, get: /b}
      - think: 20ms
load:
  stages: [{duration: 2s, users: 2}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "-q")
	if o.Code == 2 || o.Code == 3 {
		t.Fatalf("run: %s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	a, b := stepOf(t, res, "s", "a"), stepOf(t, res, "s", "b")
	if sentB.Load() != 0 {
		t.Fatalf("b was sent %d times after a failed script", sentB.Load())
	}
	if b.Requests == 0 || b.Failed != b.Requests || b.ByClass["check"] != b.Requests {
		t.Errorf("b: %d requests, %d failed, classes %v; want every one a check failure", b.Requests, b.Failed, b.ByClass)
	}
	if b.LatencyAll.Count != 0 {
		t.Errorf("b: latency_all has %d samples (min %d µs), want none: nothing was sent", b.LatencyAll.Count, b.LatencyAll.MinUS)
	}
	if res.Totals.LatencyAll.Count != a.LatencyAll.Count || res.Totals.LatencyAll.MinUS < 1000 {
		t.Errorf("totals.latency_all: %d samples, min %d µs; want a's %d, none under the server's 2 ms",
			res.Totals.LatencyAll.Count, res.Totals.LatencyAll.MinUS, a.LatencyAll.Count)
	}
}

// A load that starts late on its shared schedule (here a process that
// came up 1.5 s after --start-at, within its grace) skips the part of the
// profile it missed: the arrivals due before it began are neither sent
// nor counted, so none is `dropped` and a healthy target passes
// `error_rate < 1%`; duration_s (and throughput) cover the time the load
// ran; late_start_s is to the millisecond. Before, the missed arrivals
// were counted dropped ("the generator fell more than 1s behind") or sent
// as a burst, the run failed its threshold, and the duration was the
// whole profile's.
func TestLateOpenLoadSkipsWhatItMissed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: late-open
target: %s
scenarios:
  s:
    steps:
      - {name: g, get: /ok}
load: {stages: [{duration: 3s, rate: 20/s}], max_in_flight: 50}
thresholds: ["error_rate < 1%%"]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	start := time.Now().Add(-1500 * time.Millisecond)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "-q", "--segment", "0/1",
		"--start-at", start.UTC().Format(time.RFC3339Nano), "--start-grace", "60s")
	if o.Code != 0 {
		t.Fatalf("want exit 0, nothing failed:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	late := res.Run.LateStartS
	if late < 1.5 || late >= 3 {
		t.Fatalf("late_start_s %v: want at least 1.5 (the process began that late), under the 3s profile", late)
	}
	g := stepOf(t, res, "s", "g")
	if g.ByClass["dropped"] != 0 || g.Failed != 0 {
		t.Errorf("g: %d failed, classes %v; want no dropped arrival, no failure", g.Failed, g.ByClass)
	}
	// 20/s from 0: the arrivals due before late_start_s are skipped, the
	// rest sent (one either way for the millisecond rounding).
	skipped := int64(math.Ceil(late * 20))
	if want := 60 - skipped; g.Requests < want-1 || g.Requests > want+1 {
		t.Errorf("g: %d requests, want %d: the 60 arrivals less the %d due in the first %vs", g.Requests, want, skipped, late)
	}
	if res.Run.DurationS > 3-late+0.75 {
		t.Errorf("duration_s %v: want the time the load ran, about %v, not the profile's 3s", res.Run.DurationS, 3-late)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`"late_start_s":\s*\d+(\.\d{1,3})?[,\s}]`).Match(raw) {
		t.Errorf("late_start_s is not written to the millisecond: %s", regexp.MustCompile(`"late_start_s":[^,]*`).Find(raw))
	}
}

// A load that begins after its whole profile is over (here 1.5 s late
// for a 1 s profile) sends nothing and says so: the result is partial
// with the reason, exit 3. Before, it was a silent "complete" exit 0 with
// 0 requests.
func TestLateLoadPastItsProfileSaysSo(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: late-past
target: %s
scenarios:
  s:
    steps:
      - {name: g, get: /ok}
      - think: 50ms
load: {stages: [{duration: 1s, users: 2}]}
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	start := time.Now().Add(-1500 * time.Millisecond)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "-q", "--segment", "0/1",
		"--start-at", start.UTC().Format(time.RFC3339Nano), "--start-grace", "60s")
	if o.Code != 3 {
		t.Fatalf("want exit 3, nothing was sent:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "past the end of the 1s profile: nothing was sent") {
		t.Errorf("partial %v (%q): want the reason that the whole profile was missed", res.Run.Partial, res.Run.PartialReason)
	}
	if res.Totals.Requests != 0 {
		t.Errorf("%d requests, want none", res.Totals.Requests)
	}
}

// With --workers, a setup that overruns --start-at by more than
// --start-grace still starts the workers at once on the shared schedule,
// as the coordinator's warning says (their grace counts from the end of
// the coordinator's setup, which is not their lateness), and the result
// records how late. Before, the warning promised a start, then every
// worker refused ("started too late … before its setup") and no segment
// produced a result (exit 3). A setup that overruns the whole profile
// starts no worker and says so (before: "the profile's first 1.5s is not
// sent" for a 1 s profile, 0 requests, exit 0).
func TestWorkersSetupOverrunningStartAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		overrun  time.Duration
		duration string
	}{
		{"past the grace", 3500 * time.Millisecond, "8s"},
		{"past the profile", 1500 * time.Millisecond, "1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now().Add(time.Second)
			var tornDown atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/setup":
					time.Sleep(time.Until(start.Add(tc.overrun)))
				case "/teardown":
					tornDown.Add(1)
				}
			}))
			t.Cleanup(srv.Close)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: overrun-grace
target: %s
setup:
  - {name: make, post: /setup}
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 50ms
load:
  stages: [{duration: %s, users: 2}]
`, srv.URL, tc.duration), nil)
			out := filepath.Join(t.TempDir(), "r.json")
			o := e2etest.Stampede(t, 120*time.Second, "", "run", plan, "-o", out, "-q", "--workers", "2",
				"--start-at", start.UTC().Format(time.RFC3339Nano))
			if tornDown.Load() != 1 {
				t.Errorf("the teardown ran %d times, want once", tornDown.Load())
			}
			if tc.duration == "1s" {
				if o.Code != 3 || !strings.Contains(o.Stderr, "past the end of the 1s profile: no worker was started") ||
					strings.Contains(o.Stderr, "is not sent") {
					t.Errorf("want exit 3 saying no worker was started, and no promise of a start:\n%s", o)
				}
				return
			}
			if o.Code != 0 || !strings.Contains(o.Stderr, "the workers start on its schedule at once") {
				t.Fatalf("want exit 0 after the warning:\n%s", o)
			}
			res := e2etest.ReadResult(t, out)
			if res.Totals.Requests == 0 || res.Run.Partial || res.Run.LateStartS < 3.5 {
				t.Errorf("%d requests, partial %v (%q), late_start_s %v: want both workers' load, begun 3.5s late or more",
					res.Totals.Requests, res.Run.Partial, res.Run.PartialReason, res.Run.LateStartS)
			}
		})
	}
}

// setupFailPlan is a plan whose setup creates (/create), then fails
// (/fail), with a teardown (/teardown).
func setupFailPlan(t *testing.T, target string) string {
	return e2etest.WritePlan(t, fmt.Sprintf(`name: setup-fails
target: %s
setup:
  - {name: create, post: /create}
  - {name: second, post: /fail}
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
load:
  stages: [{duration: 1s, users: 1}]
`, target), nil)
}

// Ctrl-C during the teardown that follows a failed setup leaves the
// teardown going and does not hide why the setup failed: the exit says
// `setup failed: step "second" … 500`, and the note says no load was
// sent (not "the load is over"). Before, with --workers, the setup was
// reported "cut off by Ctrl-C after 2 of its requests", and either way
// the note said the load was over.
func TestCtrlCAfterFailedSetup(t *testing.T) {
	t.Parallel()
	for _, workers := range []bool{false, true} {
		t.Run(fmt.Sprintf("workers=%v", workers), func(t *testing.T) {
			t.Parallel()
			ps := newPhaseServer(t)
			args := []string{"run", setupFailPlan(t, ps.srv.URL), "-o", filepath.Join(t.TempDir(), "r.json")}
			if workers {
				args = append(args, "--workers", "2")
			}
			p := e2etest.Start(t, "", nil, args...)
			ps.await(t, "/teardown", p)
			p.Signal(t, os.Interrupt)
			awaitStderr(t, p, "the teardown goes on")
			ps.Release()
			o := p.Wait(t, 60*time.Second)
			if o.Code != 3 || !strings.Contains(o.Stderr, `setup failed: step "second"`) || !strings.Contains(o.Stderr, "500") ||
				strings.Contains(o.Stderr, "cut off by Ctrl-C") {
				t.Errorf("want exit 3 naming the failed step and its 500, not a setup cut off:\n%s", o)
			}
			if !strings.Contains(o.Stderr, "no load was sent; the teardown goes on to clean up what the setup made") ||
				strings.Contains(o.Stderr, "the load is over") {
				t.Errorf("the note does not say that no load was sent:\n%s", o.Stderr)
			}
		})
	}
}

// Ctrl-C that cuts off a setup which created something says the
// teardown then runs (before: it ran silently), and a second Ctrl-C that
// cuts the teardown off says what the setup made may be left on the
// target (before: "nothing was measured yet, no result written", as if
// there were nothing to clean).
func TestCtrlCTeardownAfterSetupCut(t *testing.T) {
	t.Parallel()
	ps := newPhaseServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: setup-cut
target: %s
setup:
  - {name: create, post: /create}
  - {name: slow, post: /setup}
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
load:
  stages: [{duration: 1s, users: 1}]
`, ps.srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	ps.await(t, "/setup", p)
	p.Signal(t, os.Interrupt)
	ps.await(t, "/teardown", p)
	awaitStderr(t, p, "the teardown runs now to clean up what the setup made")
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 3 || !strings.Contains(o.Stderr, "the teardown was cut off, so what the setup made may be left on the target") {
		t.Errorf("want exit 3 saying the teardown was cut off:\n%s", o)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a result was written, though nothing was measured")
	}
}

// failureLines reads a failure samples file's lines.
func failureLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failure samples: %v", err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var x map[string]any
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, x)
	}
	return out
}

// --keep-failures samples the setup's and teardown's failures as well as
// the load's, with --workers too (the coordinator runs them), each line
// with its phase, so step_index says which steps it indexes. Before, the
// coordinator's own failures were never sampled (a plain run's were), and
// a teardown's step 0 merged with the load's step 0 as one step.
func TestKeepFailuresOfTheTeardown(t *testing.T) {
	t.Parallel()
	for _, workers := range []bool{false, true} {
		t.Run(fmt.Sprintf("workers=%v", workers), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/teardown" || r.URL.Path == "/bad" {
					w.WriteHeader(http.StatusInternalServerError)
				}
			}))
			t.Cleanup(srv.Close)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: keep-teardown
target: %s
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: bad, get: /bad}
      - think: 50ms
load:
  stages: [{duration: 1s, users: 2}]
`, srv.URL), nil)
			out := filepath.Join(t.TempDir(), "r.json")
			args := []string{"run", plan, "-o", out, "-q", "--keep-failures", "2"}
			if workers {
				args = append(args, "--workers", "2")
			}
			o := e2etest.Stampede(t, 120*time.Second, "", args...)
			if o.Code == 2 || o.Code == 3 {
				t.Fatalf("run: %s", o)
			}
			byPhase := map[string]int{}
			for _, x := range failureLines(t, metrics.FailuresPath(out)) {
				byPhase[fmt.Sprint(x["phase"])]++
				if x["phase"] == "teardown" && (x["step"] != "clean" || x["step_index"] != 0.0) {
					t.Errorf("teardown sample %v: want step clean, step_index 0", x)
				}
			}
			if byPhase["teardown"] != 1 || byPhase["load"] != 2 || len(byPhase) != 2 {
				t.Errorf("samples by phase %v: want the teardown's 1 and the load's 2 (--keep-failures 2)\n%s", byPhase, o.Stderr)
			}
		})
	}
}

// A run with nothing to sample leaves no failure samples file (nor a
// previous run's) and claims no save, with --workers too. Before, an
// empty RESULT.failures.jsonl was created and "0 failure samples saved"
// said.
func TestKeepFailuresNothingToKeep(t *testing.T) {
	t.Parallel()
	for _, workers := range []bool{false, true} {
		t.Run(fmt.Sprintf("workers=%v", workers), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			t.Cleanup(srv.Close)
			plan := e2etest.WritePlan(t, fmt.Sprintf(`name: keep-none
target: %s
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 50ms
load:
  stages: [{duration: 1s, users: 2}]
`, srv.URL), nil)
			out := filepath.Join(t.TempDir(), "r.json")
			path := metrics.FailuresPath(out)
			// A previous run's file must not pass for this one's.
			if err := os.WriteFile(path, []byte(`{"step":"old"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", plan, "-o", out, "-q", "--keep-failures", "2"}
			if workers {
				args = append(args, "--workers", "2")
			}
			o := e2etest.Stampede(t, 120*time.Second, "", args...)
			if o.Code != 0 {
				t.Fatalf("run: %s", o)
			}
			if _, err := os.Stat(path); err == nil {
				t.Errorf("%s exists, though nothing failed", path)
			}
			if strings.Contains(o.Stderr, "saved to "+path) {
				t.Errorf("stderr claims samples saved:\n%s", o.Stderr)
			}
		})
	}
}
