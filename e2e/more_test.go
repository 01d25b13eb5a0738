package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestCheckAndCapture: an unmet expectation on a 200 is `check`, a capture
// that finds nothing is `capture`, one per request the server answered.
func TestCheckAndCapture(t *testing.T) {
	t.Parallel()
	srv, counts := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: checks
target: %s
scenarios:
  check:
    steps:
      - think: 5ms
      - {name: body, get: /ok, expect: {status: 200, body_contains: "not in the body"}}
  capture:
    steps:
      - think: 5ms
      - name: cap
        get: /ok?capture=1
        capture: {token: {regex: "token=([a-z]+)"}}
      - {name: never, get: "/never?t={{ token }}"}
load:
  stages: [{duration: 1s, users: 2}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	body, cp := stepOf(t, res, "check", "body"), stepOf(t, res, "capture", "cap")
	if n := counts.get("/ok"); body.Requests+cp.Requests != n || n == 0 {
		t.Errorf("steps counted %d+%d requests, the server saw %d", body.Requests, cp.Requests, n)
	}
	if body.Requests == 0 || body.ByClass["check"] != body.Requests {
		t.Errorf("body step: %d requests, by_class %v: want all check", body.Requests, body.ByClass)
	}
	if cp.Requests == 0 || cp.ByClass["capture"] != cp.Requests {
		t.Errorf("cap step: %d requests, by_class %v: want all capture", cp.Requests, cp.ByClass)
	}
	// A failed step ends the iteration: the step after the failed capture
	// is never sent.
	if n := counts.get("/never"); n != 0 {
		t.Errorf("the step after a failed capture was sent %d times", n)
	}
	if len(res.Samples) == 0 {
		t.Errorf("no error samples for check/capture failures")
	}
}

// TestThresholdFails: a failed threshold is exit 1 and shows as ✗ with the
// measured value.
func TestThresholdFails(t *testing.T) {
	t.Parallel()
	srv, _ := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: threshold
target: %s
scenarios:
  s:
    steps:
      - think: 10ms
      - {name: missing, get: /missing}
load:
  stages: [{duration: 1s, users: 1}]
thresholds: ["error_rate < 1%%", "p95 < 10s"]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 1 {
		t.Fatalf("want exit 1 (a threshold failed):\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Thresholds) != 2 {
		t.Fatalf("thresholds %+v, want 2", res.Thresholds)
	}
	if res.Thresholds[0].Pass || res.Thresholds[0].Expr != "error_rate < 1%" {
		t.Errorf("threshold 0 = %+v, want error_rate failing", res.Thresholds[0])
	}
	if !strings.Contains(o.Stdout, "✗ error_rate < 1%") {
		t.Errorf("summary lacks \"✗ error_rate < 1%%\":\n%s", o.Stdout)
	}
}

// TestCheckpoint: during a run the result file is written every few
// seconds, marked partial, so a crash loses little.
func TestCheckpoint(t *testing.T) {
	t.Parallel()
	srv, _ := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: checkpoint
target: %s
scenarios:
  s:
    steps:
      - think: 50ms
      - {name: ok, get: /ok}
load:
  stages: [{duration: 20s, users: 2}]
  grace: 1s
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(out); err == nil {
			break
		}
		if time.Now().After(deadline) {
			p.Signal(t, os.Interrupt)
			t.Fatalf("no checkpoint in %s after 10s of a 20s run\n%s", out, p.Wait(t, 10*time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || res.Run.PartialReason == "" {
		t.Errorf("checkpoint: partial %v reason %q, want a partial result with a reason", res.Run.Partial, res.Run.PartialReason)
	}
	if res.Totals.Requests == 0 {
		t.Errorf("checkpoint has no requests")
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 10*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d after Ctrl-C, want 3\n%s", o.Code, o)
	}
	final := e2etest.ReadResult(t, out)
	if final.Totals.Requests < res.Totals.Requests {
		t.Errorf("final result has %d requests, the checkpoint before it %d", final.Totals.Requests, res.Totals.Requests)
	}
	if !strings.Contains(final.Run.PartialReason, "Ctrl-C") {
		t.Errorf("final partial_reason %q should mention Ctrl-C", final.Run.PartialReason)
	}
}

// TestInterruptGrace: after Ctrl-C, requests still in flight when the grace
// period ends are cut off and counted as `interrupted`.
func TestInterruptGrace(t *testing.T) {
	t.Parallel()
	srv, _ := hangServer(t)
	const users = 2
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: grace
target: %s
defaults: {timeout: 30s}
scenarios:
  s: {steps: [{name: hang, get: /hang}]}
load:
  stages: [{duration: 20s, users: %d}]
  grace: 1s
`, srv.URL, users), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	time.Sleep(1200 * time.Millisecond)
	sent := time.Now()
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 15*time.Second)
	if took := time.Since(sent); took > 1*time.Second+3*time.Second {
		t.Errorf("exit %v after Ctrl-C; grace is 1s", took)
	}
	if o.Code != 3 {
		t.Errorf("exit %d, want 3\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if !res.Run.Partial {
		t.Errorf("not partial")
	}
	if got := res.Totals.ByClass["interrupted"]; got != users || res.Totals.Requests != users {
		t.Errorf("requests %d, by_class %v: want the %d hanging requests interrupted", res.Totals.Requests, res.Totals.ByClass, users)
	}
}
