package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// scaleLatencySeries multiplies r's per-second percentiles, so a fixture
// whose histograms got slower has seconds that did too.
func scaleLatencySeries(r *result.Result, p50, p95, p99 float64) *result.Result {
	for i := range r.Series.T {
		r.Series.P50US[i] = int64(math.Round(float64(r.Series.P50US[i]) * p50))
		r.Series.P95US[i] = int64(math.Round(float64(r.Series.P95US[i]) * p95))
		r.Series.P99US[i] = int64(math.Round(float64(r.Series.P99US[i]) * p99))
	}
	return r
}

// seriesSweep is sweep with a per-second series in every level, its
// latencies following the level's (scale times the fixture's growth per
// level) and failures from the middle of the top level when failTop.
func seriesSweep(t *testing.T, scale float64, failAt3 int64, failTop bool) *result.Result {
	r := sweep(t, scale, failAt3)
	for i := range r.Levels {
		fail := ""
		if i == 2 && failTop {
			fail = "server_error"
		}
		f := scale * float64(i*i+1)
		scaleLatencySeries(withSeries(r.Levels[i].Result, 30, fail), f, f, f)
	}
	return r
}

// lagSeries gives every second of r a lag p99 of us microseconds.
func lagSeries(r *result.Result, us int64) {
	for i := range r.Series.LagP99US {
		r.Series.LagP99US[i] = us
	}
}

// A level whose generator lagged by as much as the latencies compared is
// not judged: its seconds are left out, which leaves too few. The other
// levels still are. A result without per-second lag falls back on the
// whole level's lag.
func TestCompareLeavesLaggingLevelUnjudged(t *testing.T) {
	base, slower := seriesSweep(t, 1, 200, false), seriesSweep(t, 2, 200, false)
	lagSeries(slower.Levels[1].Result, 657_000)
	c, err := Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	v := c.Verdicts[1]
	all := strings.Join(v.Findings, "\n")
	if v.Outcome != Worse || strings.Contains(all, "worse: at 1,000 users") || strings.Contains(all, "worse: at 1000 users") {
		t.Errorf("outcome %s, findings:\n%s\nwant worse by the 100 and 10k levels only", v.Outcome, all)
	}
	for _, want := range []string{"at 1000 users: left out 30 intervals of After as generator-bound", "not judged: at 1000 users: p95: too few intervals (0 paired, need 5)", "worse: at 100 users: p50 +"} {
		if !strings.Contains(all, want) {
			t.Errorf("findings lack %q:\n%s", want, all)
		}
	}
	// Every level lagging leaves nothing to judge.
	for _, l := range slower.Levels {
		lagSeries(l.Result, 657_000)
	}
	c, err = Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Verdicts[1]; v.Outcome != NotJudged || strings.Contains(strings.Join(v.Findings, "\n"), "worse:") {
		t.Errorf("outcome %s, findings %q: want not judged and no verdict", v.Outcome, v.Findings)
	}
	// A millisecond or two of lag next to latencies a hundred times larger
	// (a busy machine) leaves the comparison judged.
	for _, l := range slower.Levels {
		lagSeries(l.Result, 2_000)
	}
	c, err = Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	if v := c.Verdicts[1]; v.Outcome != Worse || strings.Contains(strings.Join(v.Findings, "\n"), "not judged") {
		t.Errorf("outcome %s, findings %q: want worse, every level judged", v.Outcome, v.Findings)
	}
	// Without per-second lag (an older result) the level's own lag decides.
	for _, l := range slower.Levels {
		l.Result.Series.LagP99US = nil
	}
	withLag(slower.Levels[1].Result, 657_000)
	c, err = Compare([]*result.Result{base, slower}, []string{"Before", "After"})
	if err != nil {
		t.Fatal(err)
	}
	if all := strings.Join(c.Verdicts[1].Findings, "\n"); !strings.Contains(all, "at 1000 users: not judged: After's generator lag p99 657") {
		t.Errorf("findings lack the whole level's lag:\n%s", all)
	}
}

// withLag gives r's generator a lag p99 of us microseconds.
func withLag(r *result.Result, us int64) {
	h := result.NewHistogram()
	for range 100 {
		h.RecordValue(us)
	}
	r.Generator.Lag = result.LatencyOf(h)
}

// Different plans, different models and partial runs are not judged, and
// the verdict says why.
func TestCompareNotJudged(t *testing.T) {
	other := func(change func(*result.Result)) *result.Result {
		r := withSeries(healthyClosed(t), 30, "")
		change(r)
		return r
	}
	for _, c := range []struct {
		r    *result.Result
		want string
	}{
		{other(func(r *result.Result) { r.Plan.SHA256 = "abc" }), "not judged: After used a different plan from Before"},
		{other(func(r *result.Result) { r.Run.Model = "open" }), "not judged: Before ran the closed model and After the open model"},
		{other(func(r *result.Result) { r.Run.Partial = true }), "not judged: After is a partial result"},
	} {
		cmp, err := Compare([]*result.Result{withSeries(healthyClosed(t), 30, ""), c.r}, []string{"Before", "After"})
		if err != nil {
			t.Fatal(err)
		}
		if v := cmp.Verdicts[1]; v.Outcome != NotJudged || !strings.Contains(strings.Join(v.Findings, "\n"), c.want) {
			t.Errorf("outcome %s, findings %q: want not judged, %q", v.Outcome, v.Findings, c.want)
		}
	}
}

// Repeats: the runs of each side are the samples, the verdict is one,
// and every run of the other side shows it.
func TestCompareRepeats(t *testing.T) {
	var rs []*result.Result
	for i := range 6 {
		r := withSeries(healthyClosed(t), 30, "")
		f := 1 + 0.01*float64(i%3) // a little run-to-run spread
		if i >= 3 {
			f *= 1.5
		}
		rs = append(rs, scaleLatencySeries(r, f, f, f))
	}
	c, err := CompareWith(rs, []string{"A1", "A2", "A3", "B1", "B2", "B3"}, Options{Baselines: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Judged) != 1 || c.Judged[0].Label != "B1+B2+B3 (3 runs)" || c.BaselineLabel() != "A1+A2+A3 (3 runs)" {
		t.Fatalf("judged %+v against %q: want one verdict on B1+B2+B3", c.Judged, c.BaselineLabel())
	}
	v := c.Judged[0].Verdict
	all := strings.Join(v.Findings, "\n")
	if v.Outcome != Worse || !strings.Contains(all, "worse: p95 +50 %") || !strings.Contains(all, "rests on 3 and 3 runs") {
		t.Errorf("outcome %s, findings:\n%s\nwant worse, p95 +50 %% over 3 and 3 runs", v.Outcome, all)
	}
	if c.Verdicts[1].Outcome != Baseline || c.Verdicts[4].Outcome != Worse {
		t.Errorf("per-run outcomes %v: want the baseline side baseline, the other side worse", c.Verdicts)
	}
	if got := c.Worse(); len(got) != 1 || got[0] != "B1+B2+B3 (3 runs)" {
		t.Errorf("Worse() = %q", got)
	}
	var page, md bytes.Buffer
	if err := CompareHTML(&page, c); err != nil {
		t.Fatal(err)
	}
	if err := CompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	for out, label := range map[string]string{page.String(): "B1&#43;B2&#43;B3 (3 runs)", md.String(): "B1+B2+B3 (3 runs)"} {
		if strings.Count(out, label) != 1 || !strings.Contains(out, "each run one sample") {
			t.Errorf("the page should give the one verdict on B1+B2+B3 once, with its method:\n%s", out)
		}
	}
	for _, n := range []int{1, 5} {
		if _, err := CompareWith(rs, nil, Options{Baselines: n}); err == nil || !strings.Contains(err.Error(), "at least two runs on each side") {
			t.Errorf("%d baseline runs of 6: %v, want an error", n, err)
		}
	}
	if _, err := CompareWith(rs[:2], nil, Options{MinEffect: 1.5}); err == nil {
		t.Error("a minimum effect of 150 % was accepted")
	}
}
