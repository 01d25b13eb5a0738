package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
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
// it holds until released.
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
