package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A SIGTERM (a CI job cancelled, docker stop, kubectl delete) is named as
// what it was: before, the result and the terminal said "Ctrl-C".
func TestSIGTERMIsNamed(t *testing.T) {
	t.Parallel()
	srv, hits := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s: {steps: [{think: 10ms}, {name: ok, get: /ok}]}
load: {stages: [{duration: 60s, users: 2}], grace: 1s}
`, srv.URL), nil)
	out := filepath.Join(filepath.Dir(plan), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-o", out)
	deadline := time.Now().Add(60 * time.Second)
	for hits.get("/ok") < 10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // until the load runs
	}
	p.Signal(t, syscall.SIGTERM)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d after SIGTERM, want 3\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if r := res.Run.PartialReason; !strings.Contains(r, "SIGTERM") || strings.Contains(r, "Ctrl-C") {
		t.Errorf("partial_reason %q, want it to name SIGTERM, not Ctrl-C", r)
	}
	if !strings.Contains(o.Stderr, "SIGTERM received") {
		t.Errorf("stderr does not say SIGTERM was received:\n%s", o.Stderr)
	}
}
