package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestFailingTargetDoesNotMultiplyLoad: a closed model's users whose first
// step fails still wait the think their iteration would have had before
// trying again. 3 users with an hour of think after a step that always
// fails send 3 requests in a 1 s run; before, each failing user came back
// at once and the run sent thousands.
func TestFailingTargetDoesNotMultiplyLoad(t *testing.T) {
	t.Parallel()
	srv, seen := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: failing-target
target: %s
scenarios:
  s:
    steps:
      - {name: first, get: /unavailable}
      - think: 1h
      - {name: second, get: /ok}
load:
  grace: 1s
  stages: [{duration: 1s, users: 3}]
`, srv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 2*time.Minute, "", "run", plan, "-o", out)
	if o.Code == 2 || o.Code > 3 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if res.Totals.Requests != 3 || res.Totals.ByClass["server_error"] != 3 {
		t.Errorf("requests %d by class %v, want 3 server errors: one failed iteration per user", res.Totals.Requests, res.Totals.ByClass)
	}
	if n := seen.get("/unavailable"); n != 3 || seen.get("/ok") != 0 {
		t.Errorf("server saw %d /unavailable and %d /ok, want 3 and 0", n, seen.get("/ok"))
	}
}
