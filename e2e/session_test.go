package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/session"
)

// holdServer answers nothing until the test ends: requests in flight stay
// in flight for as long as a grace period could wait.
func holdServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	return srv, &seen
}

// Every command that runs a test follows one Ctrl-C policy (the session's):
// on gates, as on run, the second Ctrl-C writes the partial result at once
// and exits 3, instead of waiting out the grace period for requests that
// will not end. Before, gates ignored the second Ctrl-C and waited the
// whole grace (60s here).
func TestGatesCtrlCTwiceQuitsWithPartial(t *testing.T) {
	t.Parallel()
	srv, seen := holdServer(t)
	dir, plan := writeSessionPlan(t, fmt.Sprintf(`name: gates-quit
target: %s
defaults: {timeout: 120s}
scenarios:
  s: {steps: [{name: hold, get: /}]}
load:
  grace: 60s
  stages: [{duration: 1s, users: 1}]
gates:
  vary: users
  levels: [2, 4]
  hold: 60s
  slo: ["error_rate < 1%%"]
`, srv.URL))
	out := filepath.Join(dir, "gates.json")
	p := e2etest.Start(t, dir, nil, "gates", plan, "-o", out, "-q")
	for deadline := time.Now().Add(30 * time.Second); seen.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if seen.Load() < 2 {
		t.Fatalf("the level's users sent %d requests in 30s", seen.Load())
	}
	p.Signal(t, os.Interrupt)
	time.Sleep(200 * time.Millisecond)
	p.Signal(t, os.Interrupt)
	// The grace period is 60s: only a quit at once ends within this.
	o := p.Wait(t, 30*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d, want 3\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || res.Run.PartialReason != session.QuitReason {
		t.Errorf("partial %v, reason %q: want the second Ctrl-C's partial", res.Run.Partial, res.Run.PartialReason)
	}
	if len(res.Levels) != 1 || res.Levels[0].Value != 2 {
		t.Errorf("%d levels in the partial result, want the first level, running", len(res.Levels))
	}
	if !strings.Contains(o.Stderr, "partial result in "+out) {
		t.Errorf("stderr does not say where the partial result is:\n%s", o.Stderr)
	}
	if strings.Contains(o.Stderr, "goroutine ") {
		t.Errorf("stack trace on stderr:\n%s", o.Stderr)
	}
}

func writeSessionPlan(t *testing.T, src string) (dir, path string) {
	t.Helper()
	path = e2etest.WritePlan(t, src, nil)
	return filepath.Dir(path), path
}
