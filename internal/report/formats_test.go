package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// golden compares got with testdata/NAME, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (run with -update if the change is intended)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var started = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// withSeries gives r a per-second series of n intervals shaped like a ramp
// then a hold, with failures of one class from the middle on.
func withSeries(r *result.Result, n int, failClass string) *result.Result {
	r.Run.Started = started
	s := result.Series{IntervalS: 1, Failed: map[string][]int64{}}
	for i := range n {
		ramp := math.Min(1, float64(i+1)/float64(max(n/3, 1)))
		ok := int64(100 * ramp)
		s.T = append(s.T, float64(i))
		s.Started = append(s.Started, ok)
		s.Completed = append(s.Completed, ok)
		s.OK = append(s.OK, ok)
		s.P50US = append(s.P50US, int64(20000+400*i))
		s.P95US = append(s.P95US, int64(60000+900*i))
		s.P99US = append(s.P99US, int64(90000+1500*i))
		s.Active = append(s.Active, int64(40*ramp))
		s.InFlight = append(s.InFlight, int64(30*ramp))
		s.Dropped = append(s.Dropped, 0)
		s.LagP99US = append(s.LagP99US, int64(5+i%7))
		s.Target = append(s.Target, 40*ramp)
		if failClass != "" {
			f := int64(0)
			if i > n/2 {
				f = int64(i % 9)
			}
			s.Failed[failClass] = append(s.Failed[failClass], f)
		}
	}
	r.Series = s
	return r
}

// sweep is a gates run over three user levels, each level a full result.
func sweep(t *testing.T, scale float64, failAt3 int64) *result.Result {
	r := healthyClosed(t)
	for i, users := range []float64{100, 1000, 10000} {
		var fails []failure
		if i == 2 {
			fails = []failure{{class: sample.ServerError, n: failAt3, lat: dist{2 * ms, 90 * ms, 1}}}
		}
		hi := int64(float64(60*ms) * scale * float64(i*i+1))
		lr := build(t, result.Result{Run: result.RunInfo{DurationS: 30, Model: "closed", LatencyFrom: "send", MaxUsers: int(users)}},
			stepSpec{scenario: "voter", name: "GET parties", group: "reads", ok: 3000, okLat: dist{3 * ms, hi, 2}, fails: fails})
		r.Levels = append(r.Levels, result.Level{Vary: "users", Value: users, SLO: []result.Threshold{{Expr: "p95 < 1s", Pass: i < 2}}, Pass: i < 2, Result: lr})
	}
	return r
}

func TestMarkdownGolden(t *testing.T) {
	cases := []struct {
		name string
		res  func(*testing.T) *result.Result
	}{
		{"healthy_closed", func(t *testing.T) *result.Result { return withSeries(healthyClosed(t), 30, "") }},
		{"overloaded_every_class", overloaded},
		{"partial_thresholds", partialThresholds},
		{"sweep_levels", func(t *testing.T) *result.Result { return sweep(t, 1, 200) }},
		{"connections_monitors", func(t *testing.T) *result.Result { return withConnections(withMonitors(healthyClosed(t))) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Markdown(&b, c.res(t)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".md.golden", b.Bytes())
		})
	}
}

// A step name with Markdown's own syntax must not break the table.
func TestMarkdownEscapes(t *testing.T) {
	r := build(t, result.Result{Plan: result.PlanInfo{Name: "a|b"}},
		stepSpec{scenario: "s", name: "GET /a|b <script>", ok: 10, okLat: dist{1 * ms, 2 * ms, 1}})
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "<script>") {
		t.Errorf("raw <script> in Markdown output:\n%s", out)
	}
	if !strings.Contains(out, `| GET /a\|b &lt;script&gt; |`) {
		t.Errorf("step name not escaped in the table:\n%s", out)
	}
}

func compareRuns(t *testing.T) []*result.Result {
	before := withSeries(healthyClosed(t), 30, "")
	// After: the same plan, every step slower in the tail and failing.
	after := build(t, result.Result{
		Plan: before.Plan,
		Run:  result.RunInfo{DurationS: 30.2, Model: "closed", LatencyFrom: "send", MaxUsers: 20, Segment: result.Segment{Count: 1}},
	},
		stepSpec{scenario: "voter", name: "GET parties", group: "reads", ok: 1400, okLat: dist{3265, 140 * ms, 3},
			fails: []failure{{class: sample.ServerError, n: 100, lat: dist{200 * ms, 210 * ms, 1}}}},
		stepSpec{scenario: "voter", name: "GET results", group: "reads", ok: 500, okLat: dist{697, 9 * ms, 1.5}},
		stepSpec{scenario: "voter", name: "POST vote", group: "writes", ok: 950, okLat: dist{8 * ms, 300 * ms, 3},
			fails: []failure{{class: sample.Timeout, n: 50, lat: dist{5 * s, 5 * s, 1}}}},
	)
	// Its seconds are slower too, as its histograms are.
	scaleLatencySeries(withSeries(after, 32, "server_error"), 1.03, 3, 3.9)
	// Again: a re-run of the baseline with the same distribution, which
	// must come out within noise.
	again := withSeries(healthyClosed(t), 30, "")
	return []*result.Result{before, after, again}
}

func TestCompareGolden(t *testing.T) {
	c, err := Compare(compareRuns(t), []string{"V1", "V2", "V1 again"})
	if err != nil {
		t.Fatal(err)
	}
	var txt, md bytes.Buffer
	if err := CompareText(&txt, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt.golden", txt.Bytes())
	if err := CompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.md.golden", md.Bytes())
	if c.Verdicts[1].Outcome != Worse || c.Verdicts[2].Outcome != WithinNoise {
		t.Errorf("verdicts %v, want worse then within noise", c.Verdicts)
	}
}

func TestCompareSweepGolden(t *testing.T) {
	c, err := Compare([]*result.Result{seriesSweep(t, 1, 200, true), seriesSweep(t, 0.7, 20, false)}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	var txt, md bytes.Buffer
	if err := CompareText(&txt, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_sweep.txt.golden", txt.Bytes())
	if err := CompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_sweep.md.golden", md.Bytes())
	for _, want := range []string{"| (Before) P95 |", "| (After) P95 |", "| (Before) Requests Failed |", "| (After) Requests Failed |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("sweep comparison lacks the seed's row %q", want)
		}
	}
}

func TestCompareRefuses(t *testing.T) {
	r := healthyClosed(t)
	cases := []struct {
		rs     []*result.Result
		labels []string
		want   string
	}{
		{[]*result.Result{r}, nil, "at least two"},
		{[]*result.Result{r, r}, []string{"a"}, "1 labels for 2 results"},
		{[]*result.Result{r, r}, []string{"a", " "}, "a label is empty"},
	}
	for _, c := range cases {
		if _, err := Compare(c.rs, c.labels); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Compare(%d runs, %q) = %v, want an error containing %q", len(c.rs), c.labels, err, c.want)
		}
	}
	bad := healthyClosed(t)
	bad.Totals.LatencyOK.HDR = "garbage"
	if _, err := Compare([]*result.Result{r, bad}, []string{"good", "bad"}); err == nil || !strings.Contains(err.Error(), "bad: totals latency_ok: bad hdr histogram") {
		t.Errorf("got %v, want an error naming the run and the histogram", err)
	}
}

var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`)

func TestHTMLSelfContained(t *testing.T) {
	r := withSeries(overloaded(t), 60, "server_error")
	r.Samples = []result.ErrorSample{{Step: "POST vote", Class: "other", Message: `dial: <weird> "error"`, Count: 3}}
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if m := externalRef.FindString(out); m != "" {
		t.Errorf("page refers to the network (%q); reports must open offline", m)
	}
	for _, want := range []string{
		"<title>scalection — stampede report</title>",
		"uPlot",                               // the embedded library
		"const STAMPEDE_CHARTS = [",           // the chart data
		`id="verdict"`,                        // the header's verdict
		"Server Errors (5xx)",                 // error breakdown
		"Success rate is below 95%",           // indicators
		"observer/POST vote",                  // per-step table with disambiguated names
		"dial: &lt;weird&gt; &#34;error&#34;", // error samples, escaped
		"<summary>Full text summary</summary>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var again bytes.Buffer
	if err := HTML(&again, r); err != nil {
		t.Fatal(err)
	}
	if again.String() != out {
		t.Error("two renders of one result differ; reports should be reproducible")
	}
}

// A report is built from series and histograms, so an hour at a high rate
// is no bigger than an hour at a low one, and stays small.
func TestHTMLSizeIndependentOfRequests(t *testing.T) {
	small := withSeries(healthyClosed(t), 3600, "timeout")
	big := withSeries(healthyClosed(t), 3600, "timeout")
	for i := range big.Series.OK {
		big.Series.OK[i] *= 1000
		big.Series.Completed[i] *= 1000
	}
	big.Totals.Requests *= 1000 // only the figures printed change
	big.Totals.Successful *= 1000
	var a, b bytes.Buffer
	if err := HTML(&a, small); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&b, big); err != nil {
		t.Fatal(err)
	}
	const limit = 2 << 20
	if a.Len() > limit || b.Len() > limit {
		t.Errorf("one-hour report is %d / %d bytes, want ≤ %d", a.Len(), b.Len(), limit)
	}
	if d := b.Len() - a.Len(); d > a.Len()/20 {
		t.Errorf("1000× the requests grew the page by %d bytes (of %d)", d, a.Len())
	}
}

func TestCompareHTML(t *testing.T) {
	c, err := Compare(compareRuns(t), []string{"V1", "V2", "V1 again"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"cmp-latency"`, `"label":"V2 p95"`, `class="outcome worse"`, `class="outcome noise"`, "V1 again: full text summary"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("comparison page lacks %q", want)
		}
	}
}
