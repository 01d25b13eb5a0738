package vu

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// failingServer answers 500 to /fail and 200 to anything else, counting
// the requests it sees.
func failingServer(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

const failThenThink = `
scenarios:
  s:
    steps:
      - get: /fail
      - think: 1s
      - get: /next
      - think: 2s
load: {stages: [{duration: 1s, users: 1}]}
`

// A failed step ends its iteration, but the iteration still waits the
// think its remaining steps would have taken, and sends nothing more.
func TestFailedStepStillThinks(t *testing.T) {
	base, seen := failingServer(t)
	u, sc := userFor(t, "target: "+base+failThenThink, base)
	if err := u.Begin(sc, time.Time{}); err != nil {
		t.Fatal(err)
	}
	next, think, end := u.Segment(sc, 0)
	if end || think != 3*time.Second || next != len(sc.Steps) {
		t.Fatalf("Segment after a failed step = (%d, %v, %v), want (%d, 3s, false)", next, think, end, len(sc.Steps))
	}
	if _, _, end := u.Segment(sc, next); !end {
		t.Fatal("the iteration goes on after its failed step's think")
	}
	u.End()
	if n := seen.Load(); n != 1 {
		t.Errorf("server saw %d requests, want 1: nothing after the failed step", n)
	}
}

// With the target failing every first step, a user on a simulated clock
// makes as many iterations in a window as think allows (one per 3 s), not
// as many as the loop can spin: a closed model's offered load must not
// multiply when the server fails.
func TestFailingUserKeepsItsPace(t *testing.T) {
	base, seen := failingServer(t)
	u, sc := userFor(t, "target: "+base+failThenThink, base)
	const window = 30 * time.Second
	var clock time.Duration
	iters := 0
	for clock < window && iters < 1000 { // the cap only bounds a broken loop
		if err := u.Begin(sc, time.Time{}); err != nil {
			t.Fatal(err)
		}
		iters++
		for pc := 0; ; {
			next, think, end := u.Segment(sc, pc)
			if end {
				break
			}
			clock += think
			pc = next
		}
		u.End()
	}
	if iters != 10 {
		t.Errorf("%d iterations in %v of simulated time, want 10 (one per 3 s of think)", iters, window)
	}
	if n := seen.Load(); n != int64(iters) {
		t.Errorf("server saw %d requests for %d iterations", n, iters)
	}
}

// A random think draws its wait on a failed iteration as on a good one.
func TestFailedStepDrawsRandomThink(t *testing.T) {
	base, _ := failingServer(t)
	u, sc := userFor(t, "target: "+base+`
scenarios:
  s:
    steps:
      - get: /fail
      - think: 1s..2s
load: {stages: [{duration: 1s, users: 1}]}
`, base)
	for i := 0; i < 20; i++ {
		if err := u.Begin(sc, time.Time{}); err != nil {
			t.Fatal(err)
		}
		_, think, end := u.Segment(sc, 0)
		u.End()
		if end || think < time.Second || think > 2*time.Second {
			t.Fatalf("think after a failure = %v (end %v), want 1s..2s", think, end)
		}
	}
}
