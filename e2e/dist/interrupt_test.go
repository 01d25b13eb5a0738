package dist

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// Ctrl-C on `run --workers 2` (the terminal signals the parent; workers
// run in their own process groups and get it from the parent): every
// worker stops, writes its partial result, and the parent merges them into
// a valid result marked partial, exit 3 — nothing the target served is
// missing from the counts.
func TestWorkersCtrlC(t *testing.T) {
	dir := t.TempDir()
	srv, url := serve(t)
	plan := filepath.Join(dir, "long.yaml")
	os.WriteFile(plan, []byte(fmt.Sprintf(`name: long
target: %s
scenarios:
  s:
    steps:
      - {name: GET /, get: /}
load:
  stages: [{duration: 60s, rate: 50/s}]
  max_in_flight: 20
  grace: 2s
`, url)), 0o644)
	out := filepath.Join(dir, "run.json")
	p := e2etest.Start(t, dir, nil, "run", plan, "--workers", "2", "-o", out)
	// Workers start 3 s ahead of the shared start: let the load run a bit.
	deadline := time.Now().Add(20 * time.Second)
	for {
		srv.mu.Lock()
		n := srv.n
		srv.mu.Unlock()
		if n >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 30*time.Second)
	if o.Code != 3 {
		t.Errorf("exit %d after Ctrl-C, want 3\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "Ctrl-C") {
		t.Errorf("merged result: partial %v, reason %q; want partial, naming Ctrl-C", res.Run.Partial, res.Run.PartialReason)
	}
	// Stopping on purpose is not a worker failure: one reason, said once.
	if r := res.Run.PartialReason; strings.Contains(r, "failed") || !strings.Contains(r, "(all 2 segments)") {
		t.Errorf("merged partial reason %q: want the interruption once, for all 2 segments", r)
	}
	srv.mu.Lock()
	served := int64(srv.n)
	srv.mu.Unlock()
	if res.Totals.Requests == 0 || res.Totals.Successful > served || served > res.Totals.Requests {
		t.Errorf("recorded %d requests (%d ok), the target served %d: every served request must be counted",
			res.Totals.Requests, res.Totals.Successful, served)
	}
	for i := 0; i < 2; i++ {
		seg := e2etest.ReadResult(t, filepath.Join(dir, "run.segments", fmt.Sprintf("seg-%d.json", i)))
		if !seg.Run.Partial {
			t.Errorf("segment %d: result not marked partial", i)
		}
	}
	if strings.Contains(o.Stderr, "goroutine ") {
		t.Errorf("stack trace on stderr:\n%s", o.Stderr)
	}
}
