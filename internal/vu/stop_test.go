package vu

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/plan/lang"
)

// stopServer counts requests and calls at (once) when the count reaches n.
func stopServer(t *testing.T, n int64, at func()) (string, *atomic.Int64) {
	var count atomic.Int64
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1) == n {
			once.Do(at)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &count
}

// iterateBounded runs one iteration, failing the test if it has not ended
// by a generous safety net: the iterations here would run for minutes if
// the stop were not looked at.
func iterateBounded(t *testing.T, u *User, sc *Scenario, stop Stop) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- u.Iterate(sc, time.Time{}, stop) }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		u.Interrupt()
		t.Fatal("the iteration did not end at the stop")
		return nil
	}
}

const nestedLoopPlan = `
scenarios:
  s:
    steps:
      - repeat: 10000
        steps:
          - repeat: 10000
            steps: [{get: /x}]
`

// TestLoopEndsAtSoftStop: a loop with no think step ends its iteration at
// the end of the stage (the soft stop), at the next pass, instead of
// sending its whole count; the cut-off iteration is not a failure.
func TestLoopEndsAtSoftStop(t *testing.T) {
	soft := make(chan struct{})
	base, count := stopServer(t, 5, func() { close(soft) })
	u, sc, rec := bodyUser(t, t.TempDir(), nestedLoopPlan, base, httpc.Options{})
	err := iterateBounded(t, u, sc, Stop{Soft: soft})
	if err != context.Canceled {
		t.Fatalf("Iterate = %v, want context.Canceled", err)
	}
	if n := count.Load(); n > 6 {
		t.Fatalf("server saw %d requests after the stop at the 5th, want at most 6", n)
	}
	if s := rec.Snapshot().Steps[0]; s.Failed != 0 {
		t.Fatalf("a stopped loop counted failures: %v", s.ByClass)
	}
}

// TestLoopEndsAtInterrupt: the run's end (Ctrl-C past its grace, or the
// grace over) interrupts a user looping without think: no more requests.
func TestLoopEndsAtInterrupt(t *testing.T) {
	// The user is made after its server; a network round trip is no
	// synchronisation the race detector sees.
	var up atomic.Pointer[User]
	base, count := stopServer(t, 5, func() { up.Load().Interrupt() })
	u, sc, _ := bodyUser(t, t.TempDir(), nestedLoopPlan, base, httpc.Options{})
	up.Store(u)
	if err := iterateBounded(t, u, sc, Stop{Soft: make(chan struct{})}); err != context.Canceled {
		t.Fatalf("Iterate = %v, want context.Canceled", err)
	}
	if n := count.Load(); n > 6 {
		t.Fatalf("server saw %d requests after the interrupt at the 5th, want at most 6", n)
	}
}

// TestScriptStepEndsAtSoftStop: a loop of a request and a script step
// ends at the stop before its next script call, not counted as a failure.
func TestScriptStepEndsAtSoftStop(t *testing.T) {
	soft := make(chan struct{})
	base, count := stopServer(t, 3, func() { close(soft) })
	u, sc, rec := bodyUser(t, t.TempDir(), `
scenarios:
  s:
    steps:
      - repeat: 10000
        steps:
          - get: /x
          - name: calc
            sets: [v]
            script: |
              set("v", String(response.status));
          - get: /y?v={{ v }}
`, base, httpc.Options{})
	if err := iterateBounded(t, u, sc, Stop{Soft: soft}); err != context.Canceled {
		t.Fatalf("Iterate = %v, want context.Canceled", err)
	}
	if n := count.Load(); n > 4 {
		t.Fatalf("server saw %d requests after the stop at the 3rd, want at most 4", n)
	}
	for _, s := range rec.Snapshot().Steps {
		if s.Failed != 0 {
			t.Fatalf("step %s: a stop counted failures: %v %v", s.Name, s.ByClass, s.Errors)
		}
	}
}

// TestScriptInterruptedAtRunEnd: a script call that would run until its
// time limit is stopped when the run interrupts its user; it is a stop,
// not a check failure.
func TestScriptInterruptedAtRunEnd(t *testing.T) {
	defer lang.ScriptTimeLimit.Store(lang.ScriptTimeLimit.Load())
	lang.ScriptTimeLimit.Store(int64(10 * time.Minute))
	base, _ := stopServer(t, -1, nil)
	u, sc, rec := bodyUser(t, t.TempDir(), `
scenarios:
  s:
    steps:
      - get: /x
      - name: busy
        script: |
          for (;;) {}
      - get: /y
`, base, httpc.Options{})
	go func() {
		// Interrupt once the call is under way, as the run's end would.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if runningScript(u) {
				u.Interrupt()
				return
			}
		}
	}()
	if err := iterateBounded(t, u, sc, Stop{Soft: make(chan struct{})}); err != context.Canceled {
		t.Fatalf("Iterate = %v, want context.Canceled", err)
	}
	for _, s := range rec.Snapshot().Steps {
		if s.Failed != 0 {
			t.Fatalf("step %s: an interrupted script counted failures: %v %v", s.Name, s.ByClass, s.Errors)
		}
	}
}

// runningScript says a script call of u is under way.
func runningScript(u *User) bool { return u.script.running.Load() }
