package levels

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/testserver"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// echoFeed holds each WebSocket connection, answering every message with
// itself, until the client goes; anything else is a 200.
func echoFeed(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ws" {
			testserver.WebSocketEcho(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const sessionPlan = `name: sessions
target: %s
scenarios:
  feed:
    users: 6
    websocket:
      url: /ws
      steps:
        - send: {json: {type: subscribed}}
        - {name: subscribed, wait: {json: type, equals: subscribed, timeout: 5s}}
        - hold: %s
  browse:
    steps:
      - {name: GET item, get: /items/1, expect: {status: 200}}
      - think: 20ms
load:
  grace: 5s
  stages:
    - {duration: 1s, users: 3}
thresholds: ["error_rate < 1%%", "session: error_rate < 1%%"]
`

// A level counts the sessions it ended, as a run does: the connections
// it held to its end close as its run stops, after the hold's end is read,
// and their sessions were missing from the level (requests 0 with `hold:
// run`, so `session: error_rate < 1%` had no requests and failed every
// level; with a timed hold only the sessions that ended within the hold).
// Every connection a level opened ends once, as a disconnect or open at
// its end, and each reached its hold, so its sessions are its opens.
func TestLevelCountsTheSessionsItEnded(t *testing.T) {
	url := echoFeed(t)
	for _, hold := range []string{"run", "300ms"} {
		t.Run("hold "+hold, func(t *testing.T) {
			p := mustPlan(t, fmt.Sprintf(sessionPlan, url, hold))
			out, err := Run(context.Background(), p, plan.VaryUsers, []float64{2, 4}, Options{Judge: judgeLevel, Hold: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var sessions int64
			for _, l := range out.Result.Levels {
				name := FormatLevel(l.Vary, l.Value)
				r := l.Result
				cs := sessionScenario(t, r, "feed")
				s := sessionStepOf(t, r, "feed", "session")
				ended := cs.OpenAtEnd
				for _, n := range cs.Disconnects {
					ended += n
				}
				if cs.Opened == 0 || ended != cs.Opened || s.Requests != cs.Opened || s.Successful != s.Requests {
					t.Errorf("level %s: session requests %d (ok %d); opened %d, ended %d (open at end %d, disconnects %v): want one ok session per connection",
						name, s.Requests, s.Successful, cs.Opened, ended, cs.OpenAtEnd, cs.Disconnects)
				}
				if s.LatencyAll.Count != s.Requests {
					t.Errorf("level %s: session latency count %d, requests %d", name, s.LatencyAll.Count, s.Requests)
				}
				for _, v := range l.SLO {
					if !v.Pass {
						t.Errorf("level %s: %s failed: %s", name, v.Expr, v.Error)
					}
				}
				if !l.Pass {
					t.Errorf("level %s failed", name)
				}
				// The hold's end still bounds the HTTP figures: the level's
				// totals are the sum of its HTTP steps (Check).
				if err := r.Check(); err != nil {
					t.Errorf("level %s: %v", name, err)
				}
				sessions += s.Requests
			}
			if got := sessionStepOf(t, out.Result, "feed", "session").Requests; got != sessions {
				t.Errorf("whole run: %d sessions, the levels' add up to %d", got, sessions)
			}
		})
	}
}

func sessionScenario(t *testing.T, r *result.Result, name string) result.ConnScenario {
	t.Helper()
	if r.Connections != nil {
		for _, s := range r.Connections.Scenarios {
			if s.Scenario == name {
				return s
			}
		}
	}
	t.Fatalf("no connection scenario %q in %+v", name, r.Connections)
	return result.ConnScenario{}
}

func sessionStepOf(t *testing.T, r *result.Result, scenario, name string) result.Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.Scenario == scenario && s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s/%s", scenario, name)
	return result.Step{}
}
