package levels

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A sweep whose teardown hangs has every level on disk during it (a
// checkpoint taken before the teardown), and two Ctrl-Cs save the sweep
// complete with the teardown cut off, judged by its levels (they pass:
// exit 0). Before, nothing was on disk during the teardown, and the
// second Ctrl-C saved the sweep partial, "interrupted twice", exit 3.
func TestSweepCtrlCTwiceDuringTeardown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/teardown" {
			fmt.Fprintln(w, "ok")
			return
		}
		once.Do(func() { close(entered) })
		select {
		case <-r.Context().Done():
		case <-release:
		case <-time.After(2 * time.Minute):
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	dir, path := writePlan(t, `name: sweep-teardown
target: `+srv.URL+`
teardown:
  - {name: clean, delete: /teardown}
scenarios:
  s:
    steps:
      - {name: ok, get: /ok}
      - think: 20ms
load:
  stages:
    - {duration: 1s, users: 1}
`)
	out := filepath.Join(dir, "sweep.json")
	p := e2etest.Start(t, dir, nil, "sweep", path, "--users", "1,2", "--hold", "300ms", "-o", out)
	select {
	case <-entered:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the teardown never started\n%s", p.Stderr())
	}
	cp := e2etest.ReadResult(t, out)
	if len(cp.Levels) != 2 || cp.Workflow == nil || cp.Workflow.Teardown == nil {
		t.Errorf("on disk during the teardown: %d levels, workflow %+v; want both levels, teardown not finished", len(cp.Levels), cp.Workflow)
	}

	p.Signal(t, os.Interrupt)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(p.Stderr(), "the teardown goes on") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Errorf("exit %d after Ctrl-C twice during the teardown of a passing sweep, want 0\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Run.Partial || len(res.Levels) != 2 {
		t.Errorf("saved partial %v (%q), %d levels: want both levels, complete", res.Run.Partial, res.Run.PartialReason, len(res.Levels))
	}
	if w := res.Workflow; w == nil || w.Teardown == nil || !strings.Contains(w.Teardown.Error, "cut off") {
		t.Errorf("workflow %+v: want the teardown there, marked cut off", w)
	}
}
