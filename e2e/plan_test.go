package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestBadPlan: plan mistakes end with exit 2 before any traffic, with the
// place and a hint.
func TestBadPlan(t *testing.T) {
	t.Parallel()

	t.Run("typo key", func(t *testing.T) {
		t.Parallel()
		srv, counts := statusServer(t)
		plan := e2etest.WritePlan(t, fmt.Sprintf(`name: typo
target: %s
scenarois:
  s: {steps: [{get: /ok}]}
load:
  stages: [{duration: 1s, users: 1}]
`, srv.URL), nil)
		for _, cmd := range []string{"run", "validate"} {
			o := e2etest.Stampede(t, 20*time.Second, "", cmd, plan, "-o", filepath.Join(t.TempDir(), "r.json"))
			if cmd == "validate" {
				o = e2etest.Stampede(t, 20*time.Second, "", cmd, plan)
			}
			if o.Code != 2 {
				t.Errorf("%s: exit %d, want 2\n%s", cmd, o.Code, o)
			}
			// file:line:col of the typo (line 3, column 1).
			if !regexp.MustCompile(regexp.QuoteMeta(plan) + `:3:1\b`).MatchString(o.Stderr) {
				t.Errorf("%s: stderr lacks %s:3:1:\n%s", cmd, plan, o.Stderr)
			}
			if !strings.Contains(o.Stderr, "did you mean") || !strings.Contains(o.Stderr, "scenarios") {
				t.Errorf("%s: stderr lacks `did you mean \"scenarios\"`:\n%s", cmd, o.Stderr)
			}
		}
		if n := counts.get("/ok"); n != 0 {
			t.Errorf("an invalid plan sent %d requests", n)
		}
	})

	t.Run("missing csv", func(t *testing.T) {
		t.Parallel()
		srv, _ := statusServer(t)
		plan := e2etest.WritePlan(t, fmt.Sprintf(`name: nocsv
target: %s
data:
  ids: {file: no-such-file.csv, pick: sequential}
scenarios:
  s: {steps: [{get: "/ok?id={{ data.ids.id }}"}]}
load:
  stages: [{duration: 1s, users: 1}]
`, srv.URL), nil)
		o := e2etest.Stampede(t, 20*time.Second, "", "run", plan, "-o", filepath.Join(t.TempDir(), "r.json"))
		if o.Code != 2 {
			t.Errorf("exit %d, want 2\n%s", o.Code, o)
		}
		if !strings.Contains(o.Stderr, "no-such-file.csv") {
			t.Errorf("stderr does not name the missing file:\n%s", o.Stderr)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(plan) + `:\d+:\d+`).MatchString(o.Stderr) {
			t.Errorf("stderr lacks the plan's file:line:col:\n%s", o.Stderr)
		}
	})
}

// TestUniqueDataExhausted: with pick: unique, every row is used exactly
// once, then the run stops starting iterations and says why.
func TestUniqueDataExhausted(t *testing.T) {
	t.Parallel()
	srv, counts := statusServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: unique
target: %s
data:
  voters: {file: voters.csv, pick: unique}
scenarios:
  s:
    steps:
      - {name: vote, get: "/ok?voter={{ data.voters.id }}", expect: {status: 200}}
      - think: 20ms
load:
  stages: [{duration: 3s, users: 2}]
`, srv.URL), map[string]string{"voters.csv": "id,district\nv1,d1\nv2,d1\nv3,d2\nv4,d2\nv5,d3\n"})
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	st := stepOf(t, res, "s", "vote")
	if st.Requests != 5 || st.Successful != 5 {
		t.Errorf("vote step: %d requests, %d successful; want exactly the 5 rows", st.Requests, st.Successful)
	}
	if n := counts.get("/ok"); n != 5 {
		t.Errorf("server saw %d requests, want 5", n)
	}
	if !strings.Contains(res.Run.StopReason, "voters") {
		t.Errorf("stop_reason %q does not name the data source \"voters\"", res.Run.StopReason)
	}
	if res.Run.Partial {
		t.Errorf("a run that ran out of unique rows is marked partial: %q", res.Run.PartialReason)
	}
}

// TestQuickstart: the README's first command works on a fresh machine.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("the quickstart runs for about 11s")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "quickstart.json")
	o := e2etest.Stampede(t, 60*time.Second, e2etest.ModRoot, "run", "examples/quickstart.yaml", "-o", out)
	if o.Code != 0 {
		t.Fatalf("quickstart: want exit 0\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	if res.Totals.Requests == 0 {
		t.Errorf("no requests")
	}
	if res.Totals.Failed != 0 {
		t.Errorf("%d failures: %v", res.Totals.Failed, res.Totals.ByClass)
	}
	for _, th := range res.Thresholds {
		if !th.Pass {
			t.Errorf("threshold %s failed (%s)", th.Expr, th.Value)
		}
	}
}
