package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/hostile"
)

// TestTimeout: a server that never answers makes every request a
// `timeout`, each one counted once.
func TestTimeout(t *testing.T) {
	t.Parallel()
	srv, seen := hangServer(t)
	const users = 3
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: hang
target: %s
scenarios:
  s:
    steps:
      - {name: hang, get: /hang, timeout: 300ms}
load:
  stages: [{duration: 2s, users: %d}]
`, srv.URL, users), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	n := seen.Load()
	tt := res.Totals
	if tt.Requests == 0 || tt.ByClass["timeout"] != tt.Requests || tt.Failed != tt.Requests {
		t.Errorf("requests %d, failed %d, by_class %v: want every request a timeout", tt.Requests, tt.Failed, tt.ByClass)
	}
	if got := tt.ByClass["timeout"]; got > n || got < n-users {
		t.Errorf("timeouts %d, server saw %d requests (%d users in flight at most)", got, n, users)
	}
	// A timeout cannot come early: the deadline is 300ms.
	if min := tt.LatencyAll.MinUS; min < 290_000 {
		t.Errorf("shortest timed-out request took %dµs, less than the 300ms timeout", min)
	}
	if tt.LatencyOK.Count != 0 {
		t.Errorf("latency_ok has %d values with no successful request", tt.LatencyOK.Count)
	}
}

// TestConnReset: a server that reads the request and resets the connection
// gives `conn_reset`, one per request it read.
func TestConnReset(t *testing.T) {
	t.Parallel()
	addr, seen := resetServer(t)
	const users = 2
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: reset
target: http://%s
scenarios:
  s:
    steps:
      - think: 5ms
      - {name: reset, get: /reset, timeout: 2s}
load:
  stages: [{duration: 2s, users: %d}]
`, addr, users), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	n := seen.Load()
	tt := res.Totals
	if tt.Requests == 0 || tt.ByClass["conn_reset"] != tt.Requests {
		t.Errorf("requests %d, by_class %v: want every request conn_reset", tt.Requests, tt.ByClass)
	}
	if got := tt.ByClass["conn_reset"]; got > n || got < n-users {
		t.Errorf("conn_reset %d, server read %d request heads (%d users in flight at most)", got, n, users)
	}
	if !strings.Contains(o.Stdout, "Connection Errors") {
		t.Errorf("summary has no Connection Errors line:\n%s", o.Stdout)
	}
}

// TestConnRefused: a step whose absolute URL points at a closed port gives
// `conn_refused` once per iteration that reached it, while the healthy
// target's step stays clean.
func TestConnRefused(t *testing.T) {
	t.Parallel()
	srv, counts := statusServer(t)
	dead := hostile.Refused(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: refused
target: %s
scenarios:
  s:
    steps:
      - think: 5ms
      - {name: first, get: /ok, expect: {status: 200}}
      - {name: refused, get: "http://%s/nothing-here", timeout: 2s}
load:
  stages: [{duration: 2s, users: 2}]
`, srv.URL, dead), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	first := stepOf(t, res, "s", "first")
	refused := stepOf(t, res, "s", "refused")
	if n := counts.get("/ok"); first.Requests != n || first.Successful != n || n == 0 {
		t.Errorf("first step: %d requests, %d successful; the server saw %d", first.Requests, first.Successful, n)
	}
	if refused.ByClass["conn_refused"] != first.Successful || refused.Requests != first.Successful {
		t.Errorf("refused step: %d requests, by_class %v; %d iterations reached it", refused.Requests, refused.ByClass, first.Successful)
	}
	if refused.Successful != 0 {
		t.Errorf("refused step: %d successful", refused.Successful)
	}
}

// TestUnreachableAtStart: a target with nothing listening ends the run
// before any load with exit 3 and a plain sentence, no stack trace.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	refused := hostile.Refused(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: unreachable
target: http://%s
scenarios:
  s: {steps: [{get: /}]}
load:
  stages: [{duration: 2s, users: 1}]
`, refused), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 20*time.Second, "", "run", plan, "-o", out)
	if o.Code != 3 {
		t.Fatalf("want exit 3:\n%s", o)
	}
	stderr := strings.TrimSpace(o.Stderr)
	if stderr == "" {
		t.Fatal("nothing on stderr")
	}
	for _, bad := range []string{"goroutine", "panic", ".go:"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr has %q (a stack trace?):\n%s", bad, stderr)
		}
	}
	if !strings.Contains(stderr, refused) || !strings.Contains(strings.ToLower(stderr), "unreachable") {
		t.Errorf("stderr should say the target (%s) is unreachable:\n%s", refused, stderr)
	}
	if lines := strings.Count(stderr, "\n") + 1; lines > 3 {
		t.Errorf("stderr has %d lines, want a short message:\n%s", lines, stderr)
	}
}
