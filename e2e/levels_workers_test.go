package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// countingFeed counts the WebSocket connections it accepted and the HTTP
// requests it answered, and holds each connection until the client goes.
type countingFeed struct {
	upgrades, hits atomic.Int64
}

func (c *countingFeed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ws" {
		c.hits.Add(1)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c.upgrades.Add(1)
	defer conn.CloseNow()
	for {
		if _, _, err := conn.Read(r.Context()); err != nil {
			return
		}
	}
}

const workersGates = `name: workers-gates
target: %s
tenants: {count: 1}
scenarios:
  feed:
    per_tenant: 2
    websocket: {url: /ws, steps: [{send: hi}, {hold: run}]}
  api:
    per_tenant: 1
    steps:
      - {name: hit, get: /hit}
      - think: 20ms
load:
  grace: 1s
  stages: [{duration: 1s, users: 1}]
thresholds: ["error_rate < 1%%"]
gates:
  vary: tenants
  levels: [1, 3]
  ramp: 200ms
  hold: 1s
  slo: ["upgrade: error_rate < 1%%"]
`

// Levels compose with --workers: gates took no --workers, so a level past
// one process's open files could not run at all. Each level now runs as
// two segment processes, merged exactly and judged once; the connections
// the levels opened are the ones the server accepted, one for one.
func TestGatesWithWorkers(t *testing.T) {
	feed := &countingFeed{}
	srv := httptest.NewServer(feed)
	defer srv.Close()
	path := e2etest.WritePlan(t, fmt.Sprintf(workersGates, srv.URL), nil)
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "gates.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "gates", path, "--workers", "2", "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	var opened int64
	for i, l := range res.Levels {
		r := l.Result
		cs := connScenario(t, r, "feed")
		up := stepOf(t, r, "feed", "upgrade")
		if want := int64(2 * l.Value); cs.Opened != want || up.Requests != want || !l.Pass || len(l.SLO) != 2 {
			t.Errorf("level %d: opened %d, upgrades %d, want %d; pass %v judged by %d", i+1, cs.Opened, up.Requests, want, l.Pass, len(l.SLO))
		}
		if r.Totals.Requests == 0 || r.Run.Segment.Count != 1 {
			t.Errorf("level %d: %d requests, segment %+v: want the two segments merged", i+1, r.Totals.Requests, r.Run.Segment)
		}
		opened += cs.Opened
		for k := range 2 {
			if _, err := os.Stat(filepath.Join(out+".segments", fmt.Sprintf("level-%d-seg-%d.json", i, k))); err != nil {
				t.Errorf("level %d segment %d: %v", i+1, k, err)
			}
		}
	}
	if got := feed.upgrades.Load(); got != opened || got != 8 || connScenario(t, res, "feed").Opened != got {
		t.Errorf("the server accepted %d connections; the levels opened %d (all levels %d), want 8", got, opened, connScenario(t, res, "feed").Opened)
	}
	if measured := res.Totals.Requests; measured == 0 || measured > feed.hits.Load() {
		t.Errorf("%d requests measured, %d answered: the measured part is some of what was sent", measured, feed.hits.Load())
	}
}
