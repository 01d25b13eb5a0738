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
	cs := top.Connections.Scenarios[0]
	if cs.Attempts != 5 || cs.Opened != 5 {
		t.Errorf("whole run: attempts %d, opened %d; want 5 and 5 (both levels)", cs.Attempts, cs.Opened)
	}
	// The levels ran one after another: the peak is the larger level's
	// (the sum, 5, was shown), the first level's connections closed as it
	// ended, and the measured time is the levels' own, not the span.
	if cs.PeakOpen != 3 || cs.Target != 3 || cs.OpenAtEnd != 3 || cs.Disconnects[LevelEnd] != 2 {
		t.Errorf("whole run: peak %d, target %d, open at end %d, closed at a level's end %d; want 3, 3, 3, 2", cs.PeakOpen, cs.Target, cs.OpenAtEnd, cs.Disconnects[LevelEnd])
	}
	if want := lvls[0].Result.Run.DurationS + lvls[1].Result.Run.DurationS; top.Run.DurationS != want {
		t.Errorf("whole run measured %.3fs, want the levels' %.3fs", top.Run.DurationS, want)
	}
}
