package session

import (
	"context"
	"errors"
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

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// fakeWorkerEnv makes this test binary a --workers worker (TestMain): it
// writes a complete result of fakeWorkerRequests requests where -o says.
const (
	fakeWorkerEnv      = "STAMPEDE_SESSION_TEST_WORKER"
	fakeWorkerRequests = 3
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeWorkerEnv) == "1" {
		os.Exit(fakeWorker(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeWorker(args []string) int {
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			r := res(fakeWorkerRequests, false, "")
			r.Run.Segment = result.Segment{Index: 0, Count: 1}
			if err := result.Write(args[i+1], r); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no -o")
	return 2
}

// hangingPhase is a loopback server whose path hangs until released (or
// the test ends); every other path answers at once.
type hangingPhase struct {
	srv     *httptest.Server
	entered chan struct{}
	release chan struct{}
	rel     sync.Once
	hits    atomic.Int32
}

// Release lets the hanging path answer.
func (h *hangingPhase) Release() { h.rel.Do(func() { close(h.release) }) }

func newHangingPhase(t *testing.T, path string) *hangingPhase {
	h := &hangingPhase{entered: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			return
		}
		h.hits.Add(1)
		once.Do(func() { close(h.entered) })
		select {
		case <-r.Context().Done():
		case <-h.release:
		case <-time.After(safety):
		}
	}))
	t.Cleanup(func() { h.Release(); h.srv.Close() })
	return h
}

func phasePlan(t *testing.T, target, extra string) *plan.Plan {
	t.Helper()
	src := fmt.Sprintf(`name: phases
target: %s
%s
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
load:
  stages: [{duration: 1s, users: 1}]
`, target, extra)
	p, err := plan.Parse("phases.yaml", []byte(src), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Ctrl-C during the coordinator's own setup is the session's to apply: it
// cuts the setup off and no worker is started. Before, every signal was
// passed on to workers that did not exist yet, and the setup went on.
func TestWorkersCtrlCDuringSetup(t *testing.T) {
	srv := newHangingPhase(t, "/setup")
	p := phasePlan(t, srv.srv.URL, "setup:\n  - {name: make, post: /setup}")
	h := open(t, nil)
	dir := filepath.Join(t.TempDir(), "r.segments")
	var starting atomic.Int32
	e := &Workers{Plan: p, Local: dist.Local{Bin: "/nonexistent/stampede", Plan: "phases.yaml", Workers: 2, Dir: dir},
		Run: &run.Options{SkipPreflight: true}, Starting: func(dist.Local) { starting.Add(1) }}
	ch := runAsync(h, e)
	wait(t, srv.entered, "the setup's request")
	h.sigs <- os.Interrupt
	oc := wait(t, ch, "outcome")
	if !errors.Is(oc.RunErr, run.ErrSetupCut) || oc.Result != nil || oc.Quit {
		t.Fatalf("outcome %+v: want the setup cut off by Ctrl-C, nothing measured", oc)
	}
	if exitCode(t, oc.Err()) != ExitRun {
		t.Errorf("exit %v, want 3", oc.Err())
	}
	if starting.Load() != 0 {
		t.Error("workers were started after the setup was cut off")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the segments directory exists (%v): a worker was started", err)
	}
	if h.notes.Load() != 1 {
		t.Errorf("%d stop notes, want the session's one", h.notes.Load())
	}
}

// While the coordinator tears down, the merged load is on disk (a
// checkpoint taken before the teardown), and two Ctrl-Cs save it complete
// with the teardown cut off: the exit is the thresholds' (none: 0), not 3.
func TestWorkersCtrlCTwiceDuringTeardown(t *testing.T) {
	srv := newHangingPhase(t, "/teardown")
	p := phasePlan(t, srv.srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	t.Setenv(fakeWorkerEnv, "1")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := open(t, nil)
	e := &Workers{Plan: p, Local: dist.Local{Bin: bin, Environ: os.Environ(), Plan: "phases.yaml", Workers: 1,
		Dir: filepath.Join(t.TempDir(), "r.segments"), StartAt: time.Now()},
		Run: &run.Options{SkipPreflight: true}}
	ch := runAsync(h, e)
	wait(t, srv.entered, "the teardown's request")

	cp, err := result.Read(h.out)
	if err != nil {
		t.Fatalf("nothing on disk during the teardown: %v", err)
	}
	if cp.Totals.Requests != fakeWorkerRequests || cp.Workflow == nil || cp.Workflow.Teardown == nil {
		t.Errorf("on disk during the teardown: %d requests, workflow %+v; want the merged load, teardown not finished", cp.Totals.Requests, cp.Workflow)
	}

	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	if code := wait(t, h.exits, "exit"); code != ExitOK {
		t.Errorf("exit %d, want 0: the load was complete and passed", code)
	}
	oc := wait(t, ch, "outcome")
	if !oc.Quit {
		t.Error("the second Ctrl-C did not quit")
	}
	final, err := result.Read(h.out)
	if err != nil {
		t.Fatal(err)
	}
	if final.Run.Partial || final.Totals.Requests != fakeWorkerRequests {
		t.Errorf("saved: partial %v (%q), %d requests; want the whole load, complete", final.Run.Partial, final.Run.PartialReason, final.Totals.Requests)
	}
	if w := final.Workflow; w == nil || w.Teardown == nil || !strings.Contains(w.Teardown.Error, "cut off") {
		t.Errorf("workflow %+v: want the teardown marked cut off", w)
	}
}

// A Forwarder passes signals on only while it asks: the one passed on
// counts as the first Ctrl-C, so the next, during work of the executor's
// own, quits with its snapshot.
func TestForwardingIsAPhase(t *testing.T) {
	h := open(t, nil)
	f := newFake()
	inOwn := make(chan struct{})
	whole := res(4, false, "")
	var own atomic.Bool
	f.snap = func(reason string) *result.Result {
		if !own.Load() {
			return nil
		}
		return whole
	}
	forwarding := make(chan struct{})
	f.body = func(ctx context.Context, c Control) (*result.Result, error) {
		c.Forward(true)
		close(forwarding)
		wait(t, c.Signals, "forwarded signal")
		c.Forward(false)
		own.Store(true)
		close(inOwn)
		<-ctx.Done() // the quit ends the test, and Run then cancels ctx
		return nil, nil
	}
	ch := runAsync(h, fwdSnapFake{f})
	wait(t, forwarding, "forwarding")
	h.sigs <- os.Interrupt
	wait(t, inOwn, "own work")
	if h.notes.Load() != 0 {
		t.Error("the session applied its policy to a signal it passed on")
	}
	h.sigs <- os.Interrupt
	if code := wait(t, h.exits, "exit"); code != ExitOK {
		t.Errorf("exit %d, want 0", code)
	}
	if oc := wait(t, ch, "outcome"); !oc.Quit || oc.Result == nil {
		t.Errorf("outcome %+v: want a quit with the snapshot", oc)
	}
}

type fwdSnapFake struct{ *fake }

func (f fwdSnapFake) ForwardsSignals() bool                 { return true }
func (f fwdSnapFake) Snapshot(reason string) *result.Result { return f.snap(reason) }

// A sweep whose teardown hangs has the whole run on disk during it (a
// checkpoint before the teardown), and two Ctrl-Cs save it complete with
// the teardown cut off, judged by its levels (they passed: exit 0).
// Before, the teardown ran with nothing on disk, and the second Ctrl-C
// saved every level as partial, "interrupted twice", exit 3.
func TestLevelsCtrlCTwiceDuringTeardown(t *testing.T) {
	srv := newHangingPhase(t, "/teardown")
	p := phasePlan(t, srv.srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	h := open(t, nil)
	e := &Levels{Plan: p, Vary: plan.VaryUsers, Values: []float64{1, 2},
		Options: levels.Options{Run: run.Options{SkipPreflight: true}, Hold: 200 * time.Millisecond, SLO: []string{"error_rate < 100%"}}}
	ch := runAsync(h, e)
	wait(t, srv.entered, "the teardown's request")

	cp, err := result.Read(h.out)
	if err != nil {
		t.Fatalf("nothing on disk during the teardown: %v", err)
	}
	if len(cp.Levels) != 2 || cp.Workflow == nil || cp.Workflow.Teardown == nil {
		t.Errorf("on disk during the teardown: %d levels, workflow %+v; want both levels, teardown not finished", len(cp.Levels), cp.Workflow)
	}

	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	if code := wait(t, h.exits, "exit"); code != ExitOK {
		t.Errorf("exit %d, want 0: both levels passed", code)
	}
	if oc := wait(t, ch, "outcome"); !oc.Quit {
		t.Error("the second Ctrl-C did not quit")
	}
	final, err := result.Read(h.out)
	if err != nil {
		t.Fatal(err)
	}
	if final.Run.Partial || len(final.Levels) != 2 {
		t.Errorf("saved: partial %v (%q), %d levels; want both levels, complete", final.Run.Partial, final.Run.PartialReason, len(final.Levels))
	}
	for _, lv := range final.Levels {
		if lv.Result == nil || lv.Result.Run.Partial {
			t.Errorf("level %g saved partial", lv.Value)
		}
	}
	if w := final.Workflow; w == nil || w.Teardown == nil || !strings.Contains(w.Teardown.Error, "cut off") {
		t.Errorf("workflow %+v: want the teardown marked cut off", w)
	}
}

// A capacity search is saved before its teardown as a sweep is, and a
// second Ctrl-C during the teardown keeps its answer: complete, with the
// capacity indicator, exit 0 (a rate met the SLO).
func TestCapacityCtrlCTwiceDuringTeardown(t *testing.T) {
	srv := newHangingPhase(t, "/teardown")
	p := phasePlan(t, srv.srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	h := open(t, nil)
	e := &Levels{Plan: p, Options: levels.Options{Run: run.Options{SkipPreflight: true}, Hold: 200 * time.Millisecond, SLO: []string{"error_rate < 100%"}},
		Capacity: &levels.CapacityOptions{Start: 5, Max: 10, Budget: time.Minute}}
	ch := runAsync(h, e)
	wait(t, srv.entered, "the teardown's request")
	if cp, err := result.Read(h.out); err != nil || len(cp.Levels) == 0 {
		t.Fatalf("on disk during the teardown: %v", err)
	}
	h.sigs <- os.Interrupt
	h.sigs <- os.Interrupt
	if code := wait(t, h.exits, "exit"); code != ExitOK {
		t.Errorf("exit %d, want 0: a rate met the SLO", code)
	}
	wait(t, ch, "outcome")
	final, err := result.Read(h.out)
	if err != nil {
		t.Fatal(err)
	}
	if final.Run.Partial || len(final.Indicators) == 0 || final.Indicators[0].ID != "capacity" {
		t.Errorf("saved: partial %v (%q), indicators %+v; want the search complete with its answer", final.Run.Partial, final.Run.PartialReason, final.Indicators)
	}
}
