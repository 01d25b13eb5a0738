package conn

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A WebSocket upgrade still in flight when the run ends (Ctrl-C here)
// gets the grace period, as an HTTP request does: it counts as what the
// server answered, not as an interrupted failure the run's end caused.
// The server holds the upgrade until it sees the anchor connection closed,
// which stampede does only once the run's end has reached the connections:
// before, the upgrade was cancelled at that moment, so no timing decides
// which comes first.
func TestUpgradeInFlightAtTheEndGetsTheGrace(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	anchored := make(chan struct{}, 1)
	held := make(chan struct{}, 1)
	var handlers sync.WaitGroup
	read := func(c *websocket.Conn, r *http.Request, first func()) {
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
			if first != nil {
				first()
				first = nil
			}
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/anchor", func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		read(c, r, func() { anchored <- struct{}{} })
		releaseOnce.Do(func() { close(release) })
	})
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		held <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		read(c, r, nil)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	plan := filepath.Join(dir, "grace.yaml")
	os.WriteFile(plan, []byte(`
target: `+srv.URL+`
scenarios:
  anchor: {users: 1, websocket: {url: /anchor, steps: [{send: hi}, {hold: run}]}}
  feed: {users: 1, websocket: {url: /feed, steps: [{hold: run}]}}
load: {grace: 1m, stages: [{duration: 5m, users: 1}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	proc := e2etest.Start(t, dir, nil, "run", plan, "-o", out, "-q")
	// Safety nets only: on a loaded machine this still happens, later.
	for _, ch := range []chan struct{}{anchored, held} {
		select {
		case <-ch:
		case <-time.After(60 * time.Second):
			t.Fatalf("the anchor's hello or the feed's upgrade never came\n%s", proc.Stderr())
		}
	}
	proc.Signal(t, os.Interrupt)
	o := proc.Wait(t, 90*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d, want 3 (interrupted, partial)\n%s", o.Code, o)
	}
	r := e2etest.ReadResult(t, out)
	if !r.Run.Partial {
		t.Errorf("result not marked partial")
	}
	up := step(t, r, "feed", "upgrade")
	if up.Successful != 1 || up.Failed != 0 {
		t.Errorf("feed upgrade %+v: want the held upgrade successful\n%s", up, o)
	}
	for _, name := range []string{"anchor", "feed"} {
		cs := conns(t, r, name)
		if cs.Opened != 1 || cs.Failed != 0 || cs.OpenAtEnd != 1 {
			t.Errorf("%s: %+v, want 1 opened, open at the end", name, cs)
		}
	}
	srv.CloseClientConnections()
	handlers.Wait()
}
