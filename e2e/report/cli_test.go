package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/e2etest"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

func TestReportMarkdown(t *testing.T) {
	healthy, _ := realRuns(t)
	o := stampede(t, "report", healthy, "--format", "md")
	if o.Code != 0 {
		t.Fatalf("exit %d: %s", o.Code, o.Stderr)
	}
	// The seed's layout: summary table named by the load, the full
	// summary folded, indicators as a list.
	for _, want := range []string{
		"# Load Test Results: report-e2e\n",
		"| Metric | 20 users |\n| --- | --- |\n",
		"| P95 | ",
		"### Steps\n",
		"| GET parties | reads | ",
		"<details>\n<summary>20 users</summary>\n<pre>\nPlan: report-e2e",
		"</pre>\n</details>\n",
		"**Performance Indicators:**\n\n- ",
	} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, o.Stdout)
		}
	}
}

func TestCompareCommand(t *testing.T) {
	healthy, slow := realRuns(t)
	o := stampede(t, "compare", healthy, slow)
	if o.Code != 0 {
		t.Fatalf("exit %d: %s", o.Code, o.Stderr)
	}
	for _, want := range []string{
		"Comparing 2 runs against healthy:",
		"Metric ", "healthy", "slow", "Δ slow",
		"\nP95 ", "\nRequests Failed ",
		"Verdict (noise-aware, against healthy):\n  slow: worse\n",
	} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("compare output lacks %q:\n%s", want, o.Stdout)
		}
	}
	o = stampede(t, "compare", healthy, slow, "--labels", "V1,V2", "--format", "md")
	if o.Code != 0 || !strings.Contains(o.Stdout, "| Metric | V1 | V2 | Δ V2 |") {
		t.Errorf("--labels --format md: exit %d, output:\n%s%s", o.Code, o.Stdout, o.Stderr)
	}
	// Against itself a run is within noise, whatever its numbers.
	o = stampede(t, "compare", slow, slow, "--labels", "a,b", "--fail-on-worse")
	if o.Code != 0 || !strings.Contains(o.Stdout, "b: within noise") {
		t.Errorf("self-comparison: exit %d:\n%s%s", o.Code, o.Stdout, o.Stderr)
	}
	o = stampede(t, "compare", healthy, slow, "--fail-on-worse")
	if o.Code != 1 || !strings.Contains(o.Stderr, "slow is worse than healthy") {
		t.Errorf("--fail-on-worse: exit %d, stderr %q; want 1 naming the run", o.Code, o.Stderr)
	}
	for _, bad := range [][]string{
		{"compare", healthy},
		{"compare", healthy, slow, "--labels", "only-one"},
		{"compare", healthy, slow, "--format", "pdf"},
	} {
		if o := stampede(t, bad...); o.Code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage); stderr %q", bad, o.Code, o.Stderr)
		}
	}
}

func hist(t *testing.T, l result.Latency) *hdr.Histogram {
	t.Helper()
	h, err := l.Histogram()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestMergeCommand(t *testing.T) {
	healthy, slow := realRuns(t)
	out := filepath.Join(t.TempDir(), "merged.json")
	o := stampede(t, "merge", healthy, slow, "-o", out)
	a, b := e2etest.ReadResult(t, healthy), e2etest.ReadResult(t, slow)
	m := e2etest.ReadResult(t, out)
	// The exit code follows the thresholds evaluated on the merged whole.
	failed := false
	for _, th := range m.Thresholds {
		failed = failed || !th.Pass
	}
	if len(m.Thresholds) != 2 || (o.Code == 1) != failed || (o.Code != 0 && o.Code != 1) {
		t.Fatalf("exit %d with thresholds %+v; stderr %s", o.Code, m.Thresholds, o.Stderr)
	}
	if m.Totals.Requests != a.Totals.Requests+b.Totals.Requests || m.Totals.Failed != a.Totals.Failed+b.Totals.Failed {
		t.Errorf("merged %d/%d requests/failed, want the sums of %d/%d and %d/%d",
			m.Totals.Requests, m.Totals.Failed, a.Totals.Requests, a.Totals.Failed, b.Totals.Requests, b.Totals.Failed)
	}
	want := hist(t, a.Totals.LatencyOK)
	want.Merge(hist(t, b.Totals.LatencyOK))
	got := hist(t, m.Totals.LatencyOK)
	for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
		if got.ValueAtPercentile(q) != want.ValueAtPercentile(q) {
			t.Errorf("p%g = %d, want %d (merge must be exact)", q, got.ValueAtPercentile(q), want.ValueAtPercentile(q))
		}
	}
	if !strings.Contains(o.Stderr, "merged 2 results") {
		t.Errorf("stderr %q lacks the merge summary", o.Stderr)
	}
	// The merged file is a normal result: every report renders it.
	if o := stampede(t, "report", out, "--format", "html", "-o", filepath.Join(t.TempDir(), "m.html")); o.Code != 0 {
		t.Errorf("report of the merged result: exit %d: %s", o.Code, o.Stderr)
	}

	// A result of another plan is refused unless forced.
	other := filepath.Join(t.TempDir(), "other-plan.json")
	b.Plan.SHA256 = strings.Repeat("f", 64)
	if err := result.Write(other, b); err != nil {
		t.Fatal(err)
	}
	o = stampede(t, "merge", healthy, other)
	if o.Code != 2 || !strings.Contains(o.Stderr, other+": plan differs") || !strings.Contains(o.Stderr, "--force") {
		t.Errorf("different plans: exit %d, stderr %q; want 2 naming the file and --force", o.Code, o.Stderr)
	}
	if o := stampede(t, "merge", healthy, other, "--force", "-o", filepath.Join(t.TempDir(), "forced.json")); o.Code > 1 {
		t.Errorf("--force: exit %d: %s", o.Code, o.Stderr)
	}
}

// Every command that reads results says which file is bad and how, and
// exits 2, for each way a file can be unusable.
func TestBadResultFiles(t *testing.T) {
	healthy, _ := realRuns(t)
	good, err := os.ReadFile(healthy)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(good, &doc); err != nil {
		t.Fatal(err)
	}
	rewrite := func(edit func(map[string]any)) []byte {
		var d map[string]any
		json.Unmarshal(good, &d)
		edit(d)
		out, _ := json.Marshal(d)
		return out
	}
	dir := t.TempDir()
	cases := []struct {
		name, content, want string
	}{
		{"truncated.json", string(good[:len(good)/2]), "not a stampede result file (invalid JSON"},
		{"not-json.json", "hello", "not a stampede result file (invalid JSON"},
		{"other.json", `{"name": "package.json, perhaps"}`, `not a stampede result file (no "schema" field)`},
		{"older.json", string(rewrite(func(d map[string]any) { d["schema"] = "stampede.result/v0" })),
			`result schema "stampede.result/v0" is not supported by this version (reads "stampede.result/v1")`},
		{"counts.json", string(rewrite(func(d map[string]any) { d["totals"].(map[string]any)["failed"] = 7 })),
			"corrupt result file: totals: successful"},
		{"hdr.json", string(rewrite(func(d map[string]any) {
			d["totals"].(map[string]any)["latency_ok"].(map[string]any)["hdr"] = "bm90IGFuIGhkcg=="
		})), "corrupt result file: totals.latency_ok: bad hdr histogram"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"report", path},
			{"report", path, "--format", "html", "-o", filepath.Join(dir, "x.html")},
			{"report", path, "--format", "md"},
			{"compare", healthy, path},
			{"merge", healthy, path},
		} {
			o := stampede(t, args...)
			if o.Code != 2 || !strings.Contains(o.Stderr, path+": "+c.want) {
				t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, o.Code, o.Stderr, path+": "+c.want)
			}
		}
	}
	missing := filepath.Join(dir, "missing.json")
	if o := stampede(t, "compare", healthy, missing); o.Code != 2 || !strings.Contains(o.Stderr, missing) {
		t.Errorf("missing file: exit %d, stderr %q", o.Code, o.Stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); err == nil {
		t.Error("a failed report left an output file behind")
	}
}

// A real run with SignalR connections and the host monitor: the Markdown
// report has the text summary's Connections and Server Metrics as tables.
func TestReportMarkdownConnectionsAndMonitors(t *testing.T) {
	in := connsRun(t)
	r, err := result.Read(in)
	if err != nil {
		t.Fatal(err)
	}
	o := stampede(t, "report", in, "--format", "md")
	if o.Code != 0 {
		t.Fatalf("exit %d: %s", o.Code, o.Stderr)
	}
	sc := r.Connections.Scenarios[0]
	for _, want := range []string{
		"### Connections\n\n| Scenario | Protocol | Attempts | Opened | Failed | Peak open |",
		"| kitchen-display | signalr | " + strconv.FormatInt(sc.Attempts, 10) + " | " + strconv.FormatInt(sc.Opened, 10) + " | ",
		"OrderPlaced " + strconv.FormatInt(sc.Pushes["OrderPlaced"], 10),
		"### Server metrics (steady part ",
		"| Monitor | Metric | Min | Avg | Max |\n",
		"| host | cpu.busy_pct | ",
	} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, o.Stdout)
		}
	}
}
