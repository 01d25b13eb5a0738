package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// loopServer counts the requests it answers.
func loopServer(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// TestLoopWithoutThinkEndsWithItsStage: nested loops with no think step
// (10^8 requests per iteration) end at the end of the stage: the process
// exits, and the result counts what the server saw. The stop was looked
// at in think steps only, so such a run went on sending long after its
// stage.
func TestLoopWithoutThinkEndsWithItsStage(t *testing.T) {
	t.Parallel()
	url, seen := loopServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: loop-stop
target: %s
scenarios:
  s:
    steps:
      - repeat: 10000
        steps:
          - repeat: 10000
            steps: [{name: x, get: /x}]
load: {grace: 1s, stages: [{duration: 1s, users: 2}]}
`, url), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	// The limit is a safety net: the loops alone would take hours.
	o := e2etest.Stampede(t, 2*time.Minute, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("%v", o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Totals.Requests == 0 || res.Totals.Requests != seen.Load() {
		t.Fatalf("result counts %d requests, server saw %d", res.Totals.Requests, seen.Load())
	}
	if res.Totals.Failed != 0 {
		t.Fatalf("a loop ended by its stage counted failures: %v", res.Totals.ByClass)
	}
}

// TestBusyScriptLoopEndsWithTheRun: a loop of script steps that each spin
// for a while ends with the run (each call looks at the stop first, and
// one under way at the end of the grace is interrupted) and counts no
// failure for it.
func TestBusyScriptLoopEndsWithTheRun(t *testing.T) {
	t.Parallel()
	url, seen := loopServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: script-stop
target: %s
scenarios:
  s:
    steps:
      - {name: first, get: /first}
      - repeat: 10000
        steps:
          - name: spin
            script: |
              const t = Date.now();
              while (Date.now() - t < 3000) {}
          - {name: x, get: /x}
load: {grace: 1s, stages: [{duration: 1s, users: 2}]}
`, url), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	// A safety net: the loop alone would take 8 hours.
	o := e2etest.Stampede(t, 2*time.Minute, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("%v", o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Totals.Requests != seen.Load() {
		t.Fatalf("result counts %d requests, server saw %d", res.Totals.Requests, seen.Load())
	}
	// Before, the script ran to its end past the grace, and the request
	// after it was then cut off: counted, never sent.
	if res.Totals.ByClass["check"] != 0 || res.Totals.ByClass["interrupted"] != 0 {
		t.Fatalf("a script stopped by the run's end counted as a check failure: %v %+v", res.Totals.ByClass, res.Steps)
	}
}
