package dist

import (
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
	"github.com/stampede-load/stampede/internal/result"
)

// hangs is a target whose one path (the plan's setup or teardown) hangs
// until the test ends; the load's path answers at once.
type hangs struct {
	path    string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	load    atomic.Int64
}

func newHangs(t *testing.T, path string) (*hangs, *httptest.Server) {
	h := &hangs{path: path, entered: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { close(h.release); srv.Close() })
	return h, srv
}

func (h *hangs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.path {
		h.load.Add(1)
		fmt.Fprintln(w, "ok")
		return
	}
	h.once.Do(func() { close(h.entered) })
	select {
	case <-r.Context().Done():
	case <-h.release:
	case <-time.After(2 * time.Minute):
	}
}

func (h *hangs) waitEntered(t *testing.T, p *e2etest.Proc) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s was never requested\n%s", h.path, p.Stderr())
	}
}

func phasesPlan(t *testing.T, target, phase string) string {
	return e2etest.WritePlan(t, fmt.Sprintf(`name: coordinator-phases
target: %s
%s
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 20ms
thresholds:
  - p95 < 10s
load:
  stages: [{duration: 1s, users: 2}]
`, target, phase), nil)
}

// Ctrl-C while the coordinator of --workers runs the plan's setup cuts
// the setup off: exit 3 saying so, no worker started, no load sent.
// Before, the signal waited for workers that did not exist yet, the setup
// went on, and the workers it then started were killed by it.
func TestWorkersCtrlCDuringCoordinatorSetup(t *testing.T) {
	t.Parallel()
	h, srv := newHangs(t, "/setup")
	plan := phasesPlan(t, srv.URL, "setup:\n  - {name: make, post: /setup}")
	dir := t.TempDir()
	p := e2etest.Start(t, dir, nil, "run", plan, "--workers", "2", "-o", "w.json")
	h.waitEntered(t, p)
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 3 || !strings.Contains(o.Stderr, "setup cut off by Ctrl-C") {
		t.Errorf("exit %d, want 3 with the setup cut off by Ctrl-C\n%s", o.Code, o)
	}
	if strings.Contains(o.Stderr, "workers start at") || strings.Contains(o.Stderr, "no segment produced") {
		t.Errorf("workers were started after the setup was cut off:\n%s", o.Stderr)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "w.segments", "seg-*")); len(logs) != 0 {
		t.Errorf("workers left %v", logs)
	}
	if n := h.load.Load(); n != 0 {
		t.Errorf("%d load requests sent after the setup was cut off", n)
	}
}

// While the coordinator of --workers tears down, the merged load is on
// disk, and two Ctrl-Cs save it complete with the teardown cut off: the
// exit is the thresholds' (0), not 3.
func TestWorkersCtrlCTwiceDuringCoordinatorTeardown(t *testing.T) {
	t.Parallel()
	h, srv := newHangs(t, "/teardown")
	plan := phasesPlan(t, srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	dir := t.TempDir()
	out := filepath.Join(dir, "w.json")
	p := e2etest.Start(t, dir, nil, "run", plan, "--workers", "2", "-o", out)
	h.waitEntered(t, p)
	sent := h.load.Load()

	cp := e2etest.ReadResult(t, out)
	if cp.Totals.Requests != sent || cp.Totals.Requests == 0 {
		t.Errorf("on disk during the teardown: %d requests, want the merged load's %d", cp.Totals.Requests, sent)
	}

	p.Signal(t, os.Interrupt)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.Stderr(), "the teardown goes on") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Errorf("exit %d after Ctrl-C twice during the teardown of a passing run, want 0\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Run.Partial || res.Totals.Requests != sent {
		t.Errorf("saved partial %v (%q), %d requests: want the complete merged load, %d", res.Run.Partial, res.Run.PartialReason, res.Totals.Requests, sent)
	}
	var td *result.Phase
	if res.Workflow != nil {
		td = res.Workflow.Teardown
	}
	if td == nil || !strings.Contains(td.Error, "cut off") {
		t.Errorf("workflow.teardown %+v: want it there, marked cut off", td)
	}
	if len(res.Thresholds) != 1 || !res.Thresholds[0].Pass {
		t.Errorf("thresholds %+v: want the one threshold judged, passing", res.Thresholds)
	}
}

// A --workers run of a plan without seed: draws one seed for the test;
// every segment draws from it, so the merged result records it and the
// plan given seed: N repeats the run.
func TestWorkersShareOneSeed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
	defer srv.Close()
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: seeds
target: %s
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 20ms
load:
  stages: [{duration: 500ms, users: 2}]
`, srv.URL), nil)
	dir := t.TempDir()
	o := e2etest.Stampede(t, time.Minute, dir, "run", plan, "-q", "--workers", "2", "-o", "w.json")
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, filepath.Join(dir, "w.json"))
	if res.Run.Seed == nil {
		t.Fatal("the merged result records no run.seed")
	}
	for i := 0; i < 2; i++ {
		seg := e2etest.ReadResult(t, filepath.Join(dir, "w.segments", fmt.Sprintf("seg-%d.json", i)))
		if seg.Run.Seed == nil || *seg.Run.Seed != *res.Run.Seed {
			t.Errorf("segment %d drew from seed %v, want the test's %d", i, seg.Run.Seed, *res.Run.Seed)
		}
	}
}
