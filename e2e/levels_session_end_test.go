package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/testserver"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// subscribeFeed answers each WebSocket message with itself and holds the
// connection until the client goes; any other request is a 200.
func subscribeFeed(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		testserver.WebSocketEcho(w, r)
	}
}

const sessionSweep = `name: ws-test
target: %s
scenarios:
  feed:
    users: 5
    websocket:
      url: /ws?d={{ vu }}
      steps:
        - send: {json: {type: subscribed, id: "{{ vu }}"}}
        - name: subscribed
          wait: {json: type, equals: subscribed, timeout: 5s}
        - hold: run
  browse:
    steps:
      - {name: GET item, get: /items/1, expect: {status: 200}}
      - think: 20ms
load:
  grace: 5s
  stages:
    - {duration: 1s, users: 0 -> 3}
    - {duration: 2s, users: 3}
thresholds: ["error_rate < 1%%", "session: error_rate < 1%%"]
`

// A sweep judges each level like a run, `session: error_rate < 1%`
// included: the connections a level holds to its end are closed by the
// level's end, and their sessions are the level's, as a run's closed at
// its end are the run's. They were left out (every level's session step
// had 0 requests, the threshold had none to judge, every level failed).
func TestSweepLevelCountsSessionsItEnded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(subscribeFeed))
	defer srv.Close()
	path := e2etest.WritePlan(t, fmt.Sprintf(sessionSweep, srv.URL), nil)
	dir := filepath.Dir(path)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "2,4", "--hold", "1s", "-o", out, "-q")
	if o.Code != 0 {
		t.Errorf("exit %d, want 0 (every level passes)\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(res.Levels))
	}
	var sessions int64
	for i, l := range res.Levels {
		r := l.Result
		cs := connScenario(t, r, "feed")
		s := stepOf(t, r, "feed", "session")
		if cs.Opened != 5 || cs.OpenAtEnd != 5 || s.Requests != cs.Opened || s.Successful != s.Requests {
			t.Errorf("level %d: session requests %d (ok %d); opened %d, open at the level's end %d: want 5 ok sessions",
				i+1, s.Requests, s.Successful, cs.Opened, cs.OpenAtEnd)
		}
		for _, v := range l.SLO {
			if !v.Pass {
				t.Errorf("level %d: %s failed: %s", i+1, v.Expr, v.Error)
			}
		}
		sessions += s.Requests
	}
	if got := stepOf(t, res, "feed", "session").Requests; got != sessions {
		t.Errorf("whole run: %d sessions, the levels' add up to %d", got, sessions)
	}
}
