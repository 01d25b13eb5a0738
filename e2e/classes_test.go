package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"

	"github.com/stampede-load/stampede/internal/result"
)

// classesRun is one run of the status-class plan, shared by
// TestClassCounts and TestReport.
type classesRun struct {
	out      e2etest.Outcome
	resPath  string
	byPath   map[string]int64 // server-side counts
	failSafe string           // set when the run itself could not be made
}

var (
	classesOnce sync.Once
	classes     classesRun
)

// scenario name → path and the class its answers must land in.
var classPaths = []struct {
	scenario, path, class string
}{
	{"ok", "/ok", ""},
	{"limited", "/limited", "rate_limited"},
	{"unavailable", "/unavailable", "server_error"},
	{"missing", "/missing", "client_error"},
}

func getClassesRun(t *testing.T) classesRun {
	t.Helper()
	classesOnce.Do(func() {
		// The server must outlive the test that happens to start it, so it
		// is not tied to t's cleanup: it is only read after the run.
		srv, counts := statusServerNoCleanup()
		defer srv.Close()
		var b strings.Builder
		fmt.Fprintf(&b, "name: classes\ntarget: %s\ndefaults: {timeout: 5s}\nscenarios:\n", srv.URL)
		for _, c := range classPaths {
			fmt.Fprintf(&b, "  %s:\n    weight: 1\n    steps:\n      - think: 5ms\n      - {name: %s, get: %s, expect: {status: 200}}\n", c.scenario, c.scenario, c.path)
		}
		b.WriteString("load:\n  stages:\n    - {duration: 2s, users: 8}\n")
		dir := filepath.Join(e2etest.Shared, "classes")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			classes.failSafe = err.Error()
			return
		}
		planPath := filepath.Join(dir, "plan.yaml")
		if err := os.WriteFile(planPath, []byte(b.String()), 0o644); err != nil {
			classes.failSafe = err.Error()
			return
		}
		classes.resPath = filepath.Join(dir, "result.json")
		// A subtest-free run: use t only for the process helpers' fatal
		// paths, which end this test and leave failSafe explaining why.
		classes.failSafe = "the run did not finish (see the first test that ran it)"
		classes.out = e2etest.Stampede(t, 30*time.Second, dir, "run", planPath, "-o", classes.resPath)
		classes.byPath = map[string]int64{}
		for _, c := range classPaths {
			classes.byPath[c.path] = counts.get(c.path)
		}
		classes.failSafe = ""
	})
	if classes.failSafe != "" {
		t.Fatalf("class-count run unavailable: %s", classes.failSafe)
	}
	return classes
}

// TestClassCounts: every 429, 503 and 404 the server sent lands in exactly
// one class, the counts match the server's to the request, and the text
// summary says the same.
func TestClassCounts(t *testing.T) {
	t.Parallel()
	cr := getClassesRun(t)
	if cr.out.Code != 0 {
		t.Fatalf("a plan without thresholds: want exit 0, got:\n%s", cr.out)
	}
	res := e2etest.ReadResult(t, cr.resPath)
	checkSums(t, res)
	if res.Run.Partial {
		t.Errorf("complete run marked partial: %q", res.Run.PartialReason)
	}
	if res.Run.Model != "closed" || res.Run.LatencyFrom != "send" {
		t.Errorf("model %q latency_from %q, want closed/send", res.Run.Model, res.Run.LatencyFrom)
	}
	var failed int64
	for _, c := range classPaths {
		st := stepOf(t, res, c.scenario, "")
		srv := cr.byPath[c.path]
		if srv == 0 {
			t.Errorf("%s: the server saw no request (8 users, 4 equal weights)", c.path)
		}
		if st.Requests != srv {
			t.Errorf("%s: result counts %d requests, the server saw %d", c.path, st.Requests, srv)
		}
		if c.class == "" {
			if st.Successful != st.Requests || st.Failed != 0 {
				t.Errorf("%s: %d of %d successful, by_class %v", c.path, st.Successful, st.Requests, st.ByClass)
			}
			continue
		}
		if got := st.ByClass[c.class]; got != srv || st.Failed != srv {
			t.Errorf("%s: by_class[%s] = %d, failed = %d, server sent %d such answers (by_class %v)", c.path, c.class, got, st.Failed, srv, st.ByClass)
		}
		if got := res.Totals.ByClass[c.class]; got != srv {
			t.Errorf("totals.by_class[%s] = %d, want %d", c.class, got, srv)
		}
		failed += srv
	}
	if res.Totals.Failed != failed {
		t.Errorf("totals.failed = %d, want %d (%v)", res.Totals.Failed, failed, res.Totals.ByClass)
	}
	var all int64
	for _, n := range cr.byPath {
		all += n
	}
	if res.Totals.Requests != all {
		t.Errorf("totals.requests = %d, server saw %d", res.Totals.Requests, all)
	}

	// The text summary on stdout.
	s := cr.out.Stdout
	if got, want := summaryInt(t, s, "Rate Limited (429):"), cr.byPath["/limited"]; got != want {
		t.Errorf("summary: Rate Limited (429): %d, want %d", got, want)
	}
	if got, want := summaryInt(t, s, "Server Errors (5xx):"), cr.byPath["/unavailable"]; got != want {
		t.Errorf("summary: Server Errors (5xx): %d, want %d", got, want)
	}
	if got, want := summaryInt(t, s, "Client Errors (4xx):"), cr.byPath["/missing"]; got != want {
		t.Errorf("summary: Client Errors (4xx): %d, want %d", got, want)
	}
	if got := summaryInt(t, s, "Total Requests:"); got != all {
		t.Errorf("summary: Total Requests: %d, want %d", got, all)
	}
	if got := summaryInt(t, s, "Failed:"); got != failed {
		t.Errorf("summary: Failed: %d, want %d", got, failed)
	}
}

// TestReport: `stampede report` recomputes the same figures from the result
// file, as text and as JSON, and names a corrupt file.
func TestReport(t *testing.T) {
	t.Parallel()
	cr := getClassesRun(t)
	res := e2etest.ReadResult(t, cr.resPath)

	t.Run("text", func(t *testing.T) {
		o := e2etest.Stampede(t, 20*time.Second, "", "report", cr.resPath, "--format", "text")
		if o.Code != 0 {
			t.Fatalf("report --format text:\n%s", o)
		}
		for label, want := range map[string]int64{
			"Total Requests:":      res.Totals.Requests,
			"Failed:":              res.Totals.Failed,
			"Rate Limited (429):":  cr.byPath["/limited"],
			"Server Errors (5xx):": cr.byPath["/unavailable"],
			"Client Errors (4xx):": cr.byPath["/missing"],
		} {
			if got := summaryInt(t, o.Stdout, label); got != want {
				t.Errorf("report: %s %d, want %d", label, got, want)
			}
		}
		// The run's own summary and the report agree line for line on the
		// counts (the report is the same renderer over the same file).
		for _, label := range []string{"Total Requests:", "Successful:", "Failed:", "Rate Limited (429):", "Server Errors (5xx):", "Client Errors (4xx):"} {
			if a, b := summaryInt(t, cr.out.Stdout, label), summaryInt(t, o.Stdout, label); a != b {
				t.Errorf("%s run summary %d, report %d", label, a, b)
			}
		}
	})

	t.Run("json", func(t *testing.T) {
		o := e2etest.Stampede(t, 20*time.Second, "", "report", cr.resPath, "--format", "json")
		if o.Code != 0 {
			t.Fatalf("report --format json:\n%s", o)
		}
		var got result.Result
		if err := json.Unmarshal([]byte(o.Stdout), &got); err != nil {
			t.Fatalf("report --format json is not JSON: %v\n%.2000s", err, o.Stdout)
		}
		if got.Totals.Requests != res.Totals.Requests || got.Totals.Failed != res.Totals.Failed {
			t.Errorf("json report totals %d/%d, result %d/%d", got.Totals.Requests, got.Totals.Failed, res.Totals.Requests, res.Totals.Failed)
		}
		for _, c := range classPaths[1:] {
			if got.Totals.ByClass[c.class] != cr.byPath[c.path] {
				t.Errorf("json report by_class[%s] = %d, want %d", c.class, got.Totals.ByClass[c.class], cr.byPath[c.path])
			}
		}
	})

	t.Run("corrupt", func(t *testing.T) {
		b, err := os.ReadFile(cr.resPath)
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(t.TempDir(), "truncated.json")
		if err := os.WriteFile(bad, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		o := e2etest.Stampede(t, 20*time.Second, "", "report", bad, "--format", "text")
		if o.Code != 2 {
			t.Errorf("report of a truncated file: exit %d, want 2\n%s", o.Code, o)
		}
		if !strings.Contains(o.Stderr, bad) && !strings.Contains(o.Stderr, "truncated.json") {
			t.Errorf("stderr does not name the file %s:\n%s", bad, o.Stderr)
		}
		if strings.Contains(o.Stderr, "goroutine") {
			t.Errorf("stack trace on stderr:\n%s", o.Stderr)
		}
	})
}
