package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A script that grows a string without bound is stopped within a memory
// budget, and the run ends with a partial result that says why (exit 3):
// before, the generator died with Go's fatal "out of memory" (exit 2, the
// code for an invalid plan, and a goroutine dump) and left no result.
func TestRunawayScriptMemoryIsBounded(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s:
    steps:
      - {name: first, get: /}
      - name: grow
        script: |
          let s = "x";
          for (;;) { s = s + s; }
      - {name: after, get: /}
load: {stages: [{duration: 30s, users: 1}]}
`, srv.URL), nil)
	out := filepath.Join(filepath.Dir(plan), "r.json")
	code, stderr, rss := runBounded(t, 5*time.Minute, "run", plan, "-o", out, "-q")
	if code != 3 {
		t.Errorf("exit %d, want 3 (partial)\n%.3000s", code, stderr)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error") {
		t.Errorf("Go runtime output reached the user:\n%.3000s", stderr)
	}
	t.Logf("peak RSS %d MB", rss>>20)
	if rss > 512<<20 {
		t.Errorf("peak RSS %d MB, want at most 512 MB", rss>>20)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no result: %v\n%.3000s", err, stderr)
	}
	res := e2etest.ReadResult(t, out)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "memory budget hit") {
		t.Errorf("partial %v, reason %q: want a partial result saying the memory budget was hit", res.Run.Partial, res.Run.PartialReason)
	}
	if res.Totals.ByClass["check"] == 0 {
		t.Errorf("the stopped script is not counted as a failure: %v", res.Totals.ByClass)
	}
}
