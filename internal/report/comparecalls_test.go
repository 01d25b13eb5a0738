package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

func metricNamed(t *testing.T, name string) metric {
	t.Helper()
	for _, m := range compareMetrics {
		if m.name == name {
			return m
		}
	}
	t.Fatalf("no metric %q", name)
	return metric{}
}

// No change only when the whole interval lies within the minimum effect;
// worse or better when it excludes no change and the estimate reaches
// the minimum effect; unclear otherwise.
func TestCompareCallFromWholeInterval(t *testing.T) {
	for _, c := range []struct {
		metric      string
		a, b        float64
		est, lo, hi float64
		want        string
	}{
		// The reviewer's p95: a small estimate, an interval that allows
		// a doubling. It was "no change" from the estimate alone.
		{"p95", 100, 96, -0.038, -0.64, 1.41, callUnclear},
		{"p95", 100, 102, 0.02, -0.08, 0.09, callNone},
		{"p95", 100, 130, 0.30, 0.12, 0.50, callWorse},
		{"p95", 100, 115, 0.15, 0.05, 0.30, callWorse},
		// Sure of a change, not sure it is under the minimum effect: it
		// was "no change".
		{"p50", 100, 105, 0.05, 0.01, 0.12, callUnclear},
		{"p50", 100, 70, -0.30, -0.37, -0.22, callBetter},
		{"throughput", 100, 130, 0.30, 0.12, 0.50, callBetter},
		{"throughput", 100, 70, -0.30, -0.40, -0.15, callWorse},
		// An identical pair: a change of zero, however wide its interval.
		{"p99", 100, 100, 0, -0.72, 2.58, callUnclear},
		{"p50", 100, 100, 0, -0.05, 0.06, callNone},
		// A failure rate, in points: the limit is 10 % of the larger
		// rate, never under 0.1 pp.
		{"error rate", 0, 0, 0, 0, 0, callNone},
		{"error rate", 0, 0.0181, 0.0181, 0.0014, 0.0382, callWorse},
		{"error rate", 0, 0.0005, 0.0005, 0.0001, 0.0012, callUnclear},
		{"error rate", 0.02, 0.021, 0.001, -0.0005, 0.0025, callUnclear},
		{"error rate", 0.02, 0.0205, 0.0005, -0.0008, 0.0009, callNone},
	} {
		ch := change{m: metricNamed(t, c.metric), a: c.a, b: c.b, est: c.est, lo: c.lo, hi: c.hi}
		ch.decide(DefaultMinEffect)
		if ch.call != c.want {
			t.Errorf("%s %+g [%+g, %+g]: %q, want %q", c.metric, c.est, c.lo, c.hi, ch.call, c.want)
		}
	}
}

// An unclear finding says why and what would settle it; a no-change one
// says its interval lies within the minimum effect.
func TestCompareUnclearFindingAdvises(t *testing.T) {
	p95 := metricNamed(t, "p95")
	unclear := change{m: p95, a: 2500, b: 2405, est: -0.038, lo: -0.64, hi: 1.41, figuresAre: figuresLabel(p95, false)}
	unclear.decide(DefaultMinEffect)
	quiet := change{m: p95, a: 2500, b: 2550, est: 0.02, lo: -0.05, hi: 0.08, figuresAre: figuresLabel(p95, false)}
	quiet.decide(DefaultMinEffect)
	v := verdictOfSides([]sidesPart{{sidesBasis: sidesBasis{changes: []change{unclear, quiet}}}}, DefaultMinEffect)
	all := strings.Join(v.Findings, "\n")
	for _, want := range []string{
		"unclear: p95 -3.8 % [-64 %, +141 %] (per-second median: 2.5ms → 2.405ms), the interval spans the ±10 % minimum effect; run longer or repeat (--vs)",
		"no change: p95 +2.0 % [-5.0 %, +8.0 %] (per-second median: 2.5ms → 2.55ms), the interval lies within the ±10 % minimum effect",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("findings lack %q:\n%s", want, all)
		}
	}
	if v.Outcome != WithinNoise {
		t.Errorf("outcome %s, want %s", v.Outcome, WithinNoise)
	}
}

// Identical runs are never worse or better, one run a side or repeats,
// even where their intervals are wide.
func TestCompareSameRunsNeverCalled(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	short := typical
	short.intervals = 10
	for range 20 {
		r := short.run(rng, 1, 1)
		sides := compareSides(sideOf("A", r), sideOf("B", r), DefaultMinEffect)
		for _, c := range sides.changes {
			if c.call == callWorse || c.call == callBetter {
				t.Fatalf("a run against itself: %s", c.text())
			}
		}
	}
}

// The verdict's latencies are the per-second medians its intervals are
// around, and say so: beside the table's whole-run P50 a bare "p50
// 2.5ms" read as a second, different P50.
func TestCompareVerdictNamesItsFigures(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	a1, a2, b1, b2 := typical.run(rng, 1, 1), typical.run(rng, 1, 1), typical.run(rng, 1.3, 1), typical.run(rng, 1.3, 1)
	one := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a1), sideOf("B", b1), DefaultMinEffect)}}, DefaultMinEffect)
	two := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a1, a2), sideOf("B", b1, b2), DefaultMinEffect)}}, DefaultMinEffect)
	for _, c := range []struct {
		v    Verdict
		want []string
	}{
		{one, []string{"p50 ", "(per-second median: ", "p95 ", "p99 "}},
		{two, []string{"(per-second median, geometric mean of the runs: "}},
	} {
		all := strings.Join(c.v.Findings, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("findings lack %q:\n%s", w, all)
			}
		}
		for _, f := range c.v.Findings {
			if strings.Contains(f, "throughput") && strings.Contains(f, "median") {
				t.Errorf("throughput is a rate, not a median: %s", f)
			}
		}
	}
	if n := strings.Count(strings.Join(one.Findings, "\n"), "per-second median: "); n != 3 {
		t.Errorf("%d latency findings named as per-second medians, want 3 (p50, p95, p99):\n%s", n, strings.Join(one.Findings, "\n"))
	}
}

// A file given twice (compare a.json a.json) is compared with itself
// under suffixed labels instead of refused.
func TestCompareSuffixesRepeatedLabels(t *testing.T) {
	r := healthyClosed(t)
	c, err := Compare([]*result.Result{r, r, r}, []string{"a.json", "a.json", "a.json#2"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.json", "a.json#2", "a.json#2#2"}; !slices.Equal(c.Labels, want) {
		t.Errorf("labels %q, want %q", c.Labels, want)
	}
	for _, j := range c.Judged {
		if j.Verdict.Outcome == Worse || j.Verdict.Outcome == Better {
			t.Errorf("%s: %s against itself", j.Label, j.Verdict.Outcome)
		}
	}
	if math.IsNaN(c.MinEffect) || c.MinEffect != DefaultMinEffect {
		t.Errorf("min effect %g", c.MinEffect)
	}
}
