package e2e

import (
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// The generator line's "max RSS" is stampede's own peak, whatever started
// it. getrusage's ru_maxrss is not: a child that Go's os/exec starts with
// vfork and exec begins with its parent's high-water mark, so a small run
// started by a large CI agent reported the agent's memory as its own.
func TestMaxRSSIsTheRunsOwn(t *testing.T) {
	// Make this (parent) process's resident set large before starting the
	// child, and keep it so until the child has ended.
	const parent = 400 << 20
	ballast := make([]byte, parent)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	plan := e2etest.WritePlan(t, `target: `+srv.URL+`
scenarios:
  s: {steps: [{get: /}]}
load: {stages: [{duration: 1s, users: 1}]}
`, nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "-q")
	runtime.KeepAlive(ballast)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	r := e2etest.ReadResult(t, out)
	if got := r.Generator.MaxRSS; got <= 0 || got >= parent {
		t.Errorf("max RSS %.1f MB for a one-user run started by a %d MB process: want the run's own peak", float64(got)/1e6, parent>>20)
	}
}
