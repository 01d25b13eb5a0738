package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// waitFor polls cond until it holds, failing the test after limit (a
// safety net, not a measurement).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestURLInterrupt: Ctrl-C on `stampede url` is run's: a graceful stop, a
// summary marked partial, -o written as a valid result marked partial with
// the reason, and exit 3.
func TestURLInterrupt(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "url", "-c", "2", "-d", "60s", "-r", "200", "-o", out, srv.URL+"/x")
	waitFor(t, 60*time.Second, "the first requests", func() bool { return hits.Load() >= 20 })
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 30*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d after Ctrl-C, want 3 as run gives\n%s", o.Code, o)
	}
	if !strings.Contains(o.Stderr, "stopping:") {
		t.Errorf("no stop note on stderr:\n%s", o.Stderr)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "Ctrl-C") {
		t.Errorf("partial %v, reason %q: want a partial result saying Ctrl-C", res.Run.Partial, res.Run.PartialReason)
	}
	if res.Totals.Requests == 0 || res.Totals.Requests > hits.Load() {
		t.Errorf("%d requests counted, the server answered %d", res.Totals.Requests, hits.Load())
	}
	checkSums(t, res)
	if !strings.Contains(o.Stdout, "PARTIAL") {
		t.Errorf("summary does not say PARTIAL:\n%s", o.Stdout)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(matches) != 1 {
		t.Errorf("files left beside the result (the write must be atomic, the reserve released): %v", matches)
	}
}

// TestURLInterruptTwice: a second Ctrl-C on `stampede url` quits at once,
// without waiting for the requests in flight, and still leaves a valid
// partial result in -o; exit 3.
func TestURLInterruptTwice(t *testing.T) {
	t.Parallel()
	srv, seen := hangServer(t)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "url", "-c", "2", "-d", "60s", "--timeout", "30s", "-o", out, srv.URL+"/hang")
	waitFor(t, 60*time.Second, "the first requests", func() bool { return seen.Load() >= 2 })
	p.Signal(t, os.Interrupt)
	// The second only once the first was heard: two signals sent together
	// may reach the process as one.
	waitFor(t, 30*time.Second, "the stop note", func() bool { return strings.Contains(p.Stderr(), "stopping:") })
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 30*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d, want 3\n%s", o.Code, o)
	}
	if !strings.Contains(o.Stderr, "quit at once; partial result in") {
		t.Errorf("stderr does not say it quit at once:\n%s", o.Stderr)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "interrupted twice") {
		t.Errorf("partial %v, reason %q: want the second Ctrl-C's partial result", res.Run.Partial, res.Run.PartialReason)
	}
	checkSums(t, res)
	if strings.Contains(o.Stderr, "goroutine") {
		t.Errorf("stack trace on stderr:\n%s", o.Stderr)
	}
}
