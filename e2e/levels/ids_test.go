package levels

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// The levels of a sweep never send an id an earlier level sent. With one
// user per level, a level's {{ iter }} values are its user's iterations, so
// any value the target sees twice was sent again by a later level; and a
// later level's user, numbered 1 in its own run like the first level's, must
// not draw the same {{ uuid }}s.
func TestSweepIDsContinueAcrossLevels(t *testing.T) {
	var mu sync.Mutex
	iters, uuids := map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		iters[q.Get("iter")]++
		uuids[q.Get("uuid")]++
		mu.Unlock()
	}))
	defer srv.Close()
	dir, path := writePlan(t, `name: ids
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - name: GET order
        get: "/order?iter={{ iter }}&uuid={{ uuid }}"
        expect: {status: 200}
      - think: 20ms
load:
  stages:
    - {duration: 1s, users: 1}
`)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "1,1,1", "--hold", "500ms", "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 3 {
		t.Fatalf("%d levels, want 3\n%s", len(res.Levels), o)
	}
	for i, l := range res.Levels {
		if l.Result == nil || l.Result.Totals.Requests == 0 {
			t.Fatalf("level %d sent nothing\n%s", i+1, o)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var again []int
	for v, n := range iters {
		k, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("iter %q is not a number", v)
		}
		if n > 1 {
			again = append(again, k)
		}
	}
	sort.Ints(again)
	if len(again) > 0 {
		t.Errorf("iter values sent at more than one level: %v (of %d values)", again, len(iters))
	}
	var dup int
	for _, n := range uuids {
		dup += n - 1
	}
	if dup > 0 {
		t.Errorf("%d uuids sent again at a later level (%d distinct)", dup, len(uuids))
	}
}

// A connection keeps its slot's {{ vu }} at every level (the same kitchen
// display reconnects), so its {{ iter }}, the count of its connects, goes
// on across levels: the pair never repeats.
func TestSweepConnectionIterContinuesAcrossLevels(t *testing.T) {
	var mu sync.Mutex
	pairs := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/feed" {
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		q := r.URL.Query()
		mu.Lock()
		pairs[q.Get("slot")+"-"+q.Get("iter")]++
		mu.Unlock()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	dir, path := writePlan(t, `name: desks
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - get: /ping
      - think: 50ms
  desk:
    users: 1
    websocket:
      url: "/feed?slot={{ vu }}&iter={{ iter }}"
      steps:
        - hold: 100ms
        - close: {code: 1000, reason: bye}
load:
  stages:
    - {duration: 1s, users: 1}
`)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "1,1", "--hold", "600ms", "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 2 {
		t.Fatalf("%d levels, want 2\n%s", len(res.Levels), o)
	}
	for i, l := range res.Levels {
		if l.Result == nil || l.Result.Connections == nil || len(l.Result.Connections.Scenarios) == 0 || l.Result.Connections.Scenarios[0].Opened == 0 {
			t.Fatalf("level %d opened no connection\n%s", i+1, o)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var again []string
	for p, n := range pairs {
		if n > 1 {
			again = append(again, fmt.Sprintf("%s ×%d", p, n))
		}
	}
	sort.Strings(again)
	if len(again) > 0 {
		t.Errorf("slot-iter pairs sent at more than one level: %v (of %d)", again, len(pairs))
	}
}
