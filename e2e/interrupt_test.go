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

// TestInterrupt: Ctrl-C stops the run, lets requests in flight finish,
// prints a partial summary and writes a result marked partial; exit 3.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	srv, _ := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: interrupt
target: %s
scenarios:
  s:
    steps:
      - think: 10ms
      - {name: ok, get: /ok, expect: {status: 200}}
load:
  stages: [{duration: 20s, users: 3}]
  grace: 2s
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 15*time.Second)
	took := time.Since(sent)
	if o.Code != 3 {
		t.Errorf("exit %d after Ctrl-C, want 3\n%s", o.Code, o)
	}
	if took > 2*time.Second+3*time.Second {
		t.Errorf("exit %v after Ctrl-C; grace is 2s", took)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial {
		t.Errorf("result not partial after Ctrl-C")
	}
	if r := res.Run.PartialReason; r == "" || !strings.Contains(r, "Ctrl-C") {
		t.Errorf("partial_reason %q should mention Ctrl-C", r)
	}
	if res.Totals.Requests == 0 {
		t.Errorf("no requests counted in 1.5s")
	}
	checkSums(t, res)
	if !strings.Contains(o.Stdout, "PARTIAL") {
		t.Errorf("summary does not say PARTIAL:\n%s", o.Stdout)
	}
	if strings.Contains(o.Stderr, "goroutine") {
		t.Errorf("stack trace on stderr:\n%s", o.Stderr)
	}
}

// TestInterruptTwice: a second Ctrl-C quits at once, without waiting for
// requests in flight, and still leaves a valid partial result.
func TestInterruptTwice(t *testing.T) {
	t.Parallel()
	srv, seen := hangServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: interrupt-twice
target: %s
defaults: {timeout: 30s}
scenarios:
  s: {steps: [{name: hang, get: /hang}]}
load:
  stages: [{duration: 20s, users: 2}]
  grace: 30s
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	p.Signal(t, os.Interrupt)
	time.Sleep(150 * time.Millisecond)
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 15*time.Second)
	took := time.Since(sent)
	if took > 3*time.Second {
		t.Errorf("exit %v after the first Ctrl-C, want within 3s", took)
	}
	if o.Code != 3 {
		t.Errorf("exit %d, want 3\n%s", o.Code, o)
	}
	if seen.Load() == 0 {
		t.Errorf("the server saw no request before Ctrl-C")
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || res.Run.PartialReason == "" {
		t.Errorf("partial %v, reason %q: want a partial result with a reason", res.Run.Partial, res.Run.PartialReason)
	}
	checkSums(t, res)
	if strings.Contains(o.Stderr, "goroutine") {
		t.Errorf("stack trace on stderr:\n%s", o.Stderr)
	}
}
