package levels

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// A connection-only run sends no HTTP request, so every level's Requests
// is 0. Combine used to keep only levels with requests, and the whole-run
// result was then just the last level's: here its attempts were 3, not 5.
func TestCombineConnectionOnlyLevels(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	var lvls []result.Level
	for _, n := range []int{2, 3} {
		p := mustPlan(t, fmt.Sprintf(`target: %s
scenarios:
  c: {users: %d, websocket: {url: /x, steps: [{send: hi}, {hold: run}]}}
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 0}
`, srv.URL, n))
		res, err := run.Run(context.Background(), p, run.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Totals.Requests != 0 || res.Connections == nil || res.Connections.Scenarios[0].Attempts != int64(n) {
			t.Fatalf("level %d: requests %d, connections %+v", n, res.Totals.Requests, res.Connections)
		}
		lvls = append(lvls, result.Level{Vary: "users", Value: float64(n), Result: res})
	}
	top := Combine(mustPlan(t, getPlan(srv.URL, "/", "", "    - {duration: 1s, users: 1}")), lvls)
	if top.Connections == nil || len(top.Connections.Scenarios) != 1 {
		t.Fatalf("connections %+v", top.Connections)
	}
	if cs := top.Connections.Scenarios[0]; cs.Attempts != 5 || cs.Opened != 5 {
		t.Errorf("whole run: attempts %d, opened %d; want 5 and 5 (both levels)", cs.Attempts, cs.Opened)
	}
}
