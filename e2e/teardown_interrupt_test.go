package e2e

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

// TestCtrlCTwiceDuringTeardown: once the load is over, its result is on
// disk before the teardown starts (a process killed during the teardown
// still leaves the whole load), and two Ctrl-Cs during a slow teardown
// save the load as complete with the teardown cut off: the exit is the
// thresholds' (0 here), not 3.
func TestCtrlCTwiceDuringTeardown(t *testing.T) {
	t.Parallel()
	var load atomic.Int64
	inTeardown := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/teardown" {
			once.Do(func() { close(inTeardown) })
			select {
			case <-r.Context().Done():
			case <-release:
			case <-time.After(60 * time.Second):
			}
			return
		}
		load.Add(1)
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: teardown-interrupt
target: %s
teardown:
  - {name: cleanup, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 20ms
thresholds:
  - p95 < 10s
load:
  stages: [{duration: 1s, users: 2}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	select {
	case <-inTeardown:
	case <-time.After(60 * time.Second):
		t.Fatalf("the teardown never started\n%s", p.Stderr())
	}
	sent := load.Load()

	// What a kill now would leave: the whole load, not a reserve file.
	cp := e2etest.ReadResult(t, out)
	if cp.Totals.Requests != sent {
		t.Errorf("on disk during the teardown: %d requests, want the load's %d", cp.Totals.Requests, sent)
	}

	p.Signal(t, os.Interrupt)
	// Two signals sent at once may reach the process as one.
	// The first one's note during the teardown says it goes on.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.Stderr(), "the teardown goes on") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 30*time.Second)
	if o.Code != 0 {
		t.Errorf("exit %d after Ctrl-C twice during the teardown of a passing run, want 0\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Run.Partial || res.Totals.Requests != sent {
		t.Errorf("saved partial %v (%q), %d requests: want the complete load, %d", res.Run.Partial, res.Run.PartialReason, res.Totals.Requests, sent)
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
	if !strings.Contains(o.Stderr, "teardown cut off") {
		t.Errorf("stderr does not say the teardown was cut off:\n%s", o.Stderr)
	}
}
