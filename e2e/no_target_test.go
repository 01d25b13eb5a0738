package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/testserver"
)

// A plan whose every URL is absolute needs no target (types.go: Target is
// "" when every step has an absolute URL), and one it names but sends
// nothing to is not checked. Before, validate said ok and run refused
// both with exit 3: `target "": scheme must be http or https`, or
// "target unreachable" for a target nothing was sent to.
func TestPlanWithoutTargetRuns(t *testing.T) {
	t.Parallel()
	var gets, upgrades atomic.Int64
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/feed" {
			gets.Add(1)
			return
		}
		upgrades.Add(1)
		testserver.WebSocketEcho(w, r)
	}))
	ws := "ws" + strings.TrimPrefix(srv.URL, "http")
	unreachable := "target: http://127.0.0.1:9\n"
	for name, plan := range map[string]string{
		"http, no target": `
scenarios:
  s: {steps: [{get: "` + srv.URL + `/x"}, {think: 50ms}]}
load: {stages: [{duration: 1s, users: 1}]}
`,
		"connections only, no target": `
scenarios:
  feed: {users: 2, websocket: {url: "` + ws + `/feed", steps: [{hold: run}]}}
load: {stages: [{duration: 1s, users: 1}]}
`,
		"http, a target nothing goes to": unreachable + `
scenarios:
  s: {steps: [{get: "` + srv.URL + `/x"}, {think: 50ms}]}
load: {stages: [{duration: 1s, users: 1}]}
`,
	} {
		path := e2etest.WritePlan(t, plan, nil)
		dir := filepath.Dir(path)
		if o := e2etest.Stampede(t, time.Minute, dir, "validate", path); o.Code != 0 {
			t.Errorf("%s: validate exit %d\n%s", name, o.Code, o)
			continue
		}
		out := filepath.Join(dir, "r.json")
		o := e2etest.Stampede(t, time.Minute, dir, "run", path, "-o", out, "-q")
		if o.Code != 0 {
			t.Errorf("%s: run exit %d, want 0\n%s", name, o.Code, o)
			continue
		}
		r := e2etest.ReadResult(t, out)
		if strings.HasPrefix(name, "connections") {
			if cs := connOf(t, r, "feed"); cs.Opened != 2 {
				t.Errorf("%s: %d opened, want 2", name, cs.Opened)
			}
		} else if r.Totals.Requests == 0 || r.Totals.Failed != 0 {
			t.Errorf("%s: %d requests, %d failed", name, r.Totals.Requests, r.Totals.Failed)
		}
	}
	if gets.Load() == 0 || upgrades.Load() != 2 {
		t.Errorf("the server saw %d GETs and %d upgrades", gets.Load(), upgrades.Load())
	}
}
