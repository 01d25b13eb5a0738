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

// The builtins that fill a whole array or buffer in one native call, and a
// spread over a native iterator (one instruction), which the heap watch
// cannot interrupt, refuse a size past the script bound with
// an error naming it, so the run stays small and counts the failure: before,
// `a.length = 1e9; a.fill(0)` appended a 16 GB []Value inside sobek and
// `new ArrayBuffer(1e10)` made 10 GB at once, all past Go's fatal out of
// memory.
func TestScriptBulkBuiltinsStayBounded(t *testing.T) {
	t.Parallel()
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
scenarios:
  s:
    steps:
      - {name: first, get: /}
      - name: bulk
        script: |
          const made = [];
          for (const f of [
            () => { const a = []; a.length = 1e9; a.fill(0); },
            () => Array(1e9).join("x"),
            () => Array.from({length: 1e9}),
            () => [...new Array(1e9).keys()],
            () => new ArrayBuffer(1e10),
            () => new Float64Array(1e9),
          ]) {
            try { f(); made.push("made"); } catch (e) { made.push(String(e)); }
          }
          fail(made.join(" | "));
      - {name: after, get: /}
load: {stages: [{duration: 2s, users: 1}]}
`, srv.URL), nil)
	out := filepath.Join(filepath.Dir(plan), "r.json")
	code, stderr, rss := runBounded(t, 5*time.Minute, "run", plan, "-o", out, "-q")
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "fatal error") {
		t.Fatalf("Go runtime output reached the user (exit %d):\n%.3000s", code, stderr)
	}
	t.Logf("exit %d, peak RSS %d MB", code, rss>>20)
	if code == 2 || code > 3 {
		t.Errorf("exit %d, want a run that counts the failed step (0, 1 or 3)\n%.3000s", code, stderr)
	}
	if rss > 512<<20 {
		t.Errorf("peak RSS %d MB, want at most 512 MB", rss>>20)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no result (exit %d): %v\n%.3000s", code, err, stderr)
	}
	res := e2etest.ReadResult(t, out)
	if res.Totals.ByClass["check"] == 0 {
		t.Errorf("the refused builtins are not counted as failures: %v", res.Totals.ByClass)
	}
	for _, want := range []string{
		"RangeError: a script may make an array of at most 1048576, not 1000000000 | " +
			"RangeError: a script may make an array of at most 1048576, not 1000000000 | " +
			"RangeError: a script may make an array of at most 1048576, not 1000000000 | " +
			"RangeError: a script may make an array of at most 1048576, not 1000000000 | " +
			"RangeError: a script may make a buffer in bytes of at most 33554432, not 10000000000 | " +
			"RangeError: a script may make a buffer in bytes of at most 33554432, not 8000000000",
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the result does not hold the refusals %q:\n%.3000s", want, raw)
		}
	}
}
