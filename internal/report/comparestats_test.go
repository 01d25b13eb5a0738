package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// synth describes runs drawn from one known distribution: per-second
// latencies around a median with AR(1) noise (neighbouring seconds move
// together, as on a real machine), a shift per run (host contention that
// holds for a whole run), and failures at a fixed rate.
type synth struct {
	intervals int
	medianUS  float64
	phi       float64 // autocorrelation of the per-second noise
	sigma     float64 // its spread, in log units
	runSigma  float64 // the spread of the per-run shift, in log units
	rate      float64 // requests per second
	failShare float64
}

// typical is a 60 s run whose per-second latencies wander by 5 % with
// autocorrelation 0.6, and whose whole run shifts by 2 % from one run to
// the next: within the spread between runs that a comparison of one run
// a side assumes (runSpread).
var typical = synth{intervals: 60, medianUS: 20_000, phi: 0.6, sigma: 0.05, runSigma: 0.02, rate: 300, failShare: 0.002}

// run draws one run whose latencies are scaled by slower (1.2: 20 %
// slower) and whose failures by failScale.
func (s synth) run(rng *rand.Rand, slower, failScale float64) *result.Result {
	shift := rng.NormFloat64() * s.runSigma
	sr := result.Series{IntervalS: 1, Failed: map[string][]int64{"server_error": nil}}
	e := rng.NormFloat64() * s.sigma
	innov := s.sigma * math.Sqrt(1-s.phi*s.phi)
	for i := range s.intervals {
		e = s.phi*e + innov*rng.NormFloat64()
		p50 := s.medianUS * slower * math.Exp(shift+e)
		n := math.Max(1, s.rate*math.Exp(0.03*rng.NormFloat64()-shift/2))
		failed := int64(math.Round(n * s.failShare * failScale * math.Exp(0.5*rng.NormFloat64())))
		ok := int64(n) - failed
		sr.T = append(sr.T, float64(i))
		sr.OK = append(sr.OK, ok)
		sr.Completed = append(sr.Completed, ok+failed)
		sr.Failed["server_error"] = append(sr.Failed["server_error"], failed)
		sr.P50US = append(sr.P50US, int64(p50))
		sr.P95US = append(sr.P95US, int64(p50*2.5*math.Exp(0.05*rng.NormFloat64())))
		sr.P99US = append(sr.P99US, int64(p50*4*math.Exp(0.1*rng.NormFloat64())))
		sr.LagP99US = append(sr.LagP99US, int64(50+rng.IntN(200)))
	}
	return &result.Result{Run: result.RunInfo{DurationS: float64(s.intervals) + 0.02, Model: "closed"}, Series: sr}
}

func sideOf(name string, rs ...*result.Result) []labelled {
	out := make([]labelled, len(rs))
	for i, r := range rs {
		out[i] = labelled{fmt.Sprintf("%s%d", name, i+1), r}
	}
	return out
}

// rate counts, over pairs comparisons of a sides of each against b sides
// of each drawn by draw, the verdicts called worse or better.
func rates(t *testing.T, pairs, each int, draw func(rng *rand.Rand, side int) *result.Result) map[Outcome]int {
	t.Helper()
	rng := rand.New(rand.NewPCG(26, 1))
	got := map[Outcome]int{}
	for range pairs {
		var a, b []*result.Result
		for range each {
			a = append(a, draw(rng, 0))
			b = append(b, draw(rng, 1))
		}
		v := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a...), sideOf("B", b...), DefaultMinEffect)}}, DefaultMinEffect)
		got[v.Outcome]++
	}
	return got
}

// Identical runs are called different in at most 5 % of pairs, and a run
// 20 % slower is called worse in at least 95 %: one run a side, judged
// over their seconds.
func TestCompareFalseAlarmsAndPowerOneRunASide(t *testing.T) {
	const pairs = 150
	aa := rates(t, pairs, 1, func(rng *rand.Rand, _ int) *result.Result { return typical.run(rng, 1, 1) })
	if called := aa[Worse] + aa[Better]; called*20 > pairs {
		t.Errorf("A/A: %d of %d pairs called worse or better (%v), want ≤ 5 %%", called, pairs, aa)
	}
	ab := rates(t, pairs, 1, func(rng *rand.Rand, side int) *result.Result {
		return typical.run(rng, 1+0.2*float64(side), 1)
	})
	if ab[Worse]*100 < pairs*95 {
		t.Errorf("A/B 20 %% slower: %d of %d pairs called worse (%v), want ≥ 95 %%", ab[Worse], pairs, ab)
	}
	t.Logf("A/A %v; A/B 20 %% %v", aa, ab)
}

// With repeats the runs are the samples, so a shift between runs larger
// than one run a side assumes is still no false alarm, and five runs a
// side see 20 %.
func TestCompareFalseAlarmsAndPowerRepeats(t *testing.T) {
	const pairs = 60
	noisy := typical
	noisy.runSigma = 0.08
	aa := rates(t, pairs, 3, func(rng *rand.Rand, _ int) *result.Result { return noisy.run(rng, 1, 1) })
	if called := aa[Worse] + aa[Better]; called*20 > pairs {
		t.Errorf("A/A 3+3 runs: %d of %d pairs called worse or better (%v), want ≤ 5 %%", called, pairs, aa)
	}
	ab := rates(t, pairs, 5, func(rng *rand.Rand, side int) *result.Result {
		return typical.run(rng, 1+0.2*float64(side), 1)
	})
	if ab[Worse]*100 < pairs*95 {
		t.Errorf("A/B 5+5 runs, 20 %% slower: %d of %d called worse (%v), want ≥ 95 %%", ab[Worse], pairs, ab)
	}
	t.Logf("A/A %v; A/B 20 %% %v", aa, ab)
}

// A change whose whole interval lies within the minimum effect is no
// change however sure it is of a change; the same change over the
// minimum is worse.
func TestCompareMinimumEffect(t *testing.T) {
	quiet := typical
	quiet.sigma, quiet.runSigma = 0.01, 0
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := quiet.run(rng, 1, 1), quiet.run(rng, 1.18, 1)
	for _, c := range []struct {
		minEffect float64
		want      Outcome
		finding   string
	}{
		{0.05, Worse, "worse: p50 +"},
		{0.40, WithinNoise, "no change: p50 +"},
	} {
		v := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a), sideOf("B", b), c.minEffect)}}, c.minEffect)
		all := strings.Join(v.Findings, "\n")
		if v.Outcome != c.want || !strings.Contains(all, c.finding) {
			t.Errorf("min effect %g: %s, findings:\n%s\nwant %s with %q", c.minEffect, v.Outcome, all, c.want, c.finding)
		}
		if c.want == WithinNoise && !strings.Contains(all, "the interval lies within the ±40 % minimum effect") {
			t.Errorf("the finding does not name the minimum effect:\n%s", all)
		}
	}
}

// The same files give the same verdict, interval for interval.
func TestCompareDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	a, b := typical.run(rng, 1, 1), typical.run(rng, 1.1, 1)
	first := compareSides(sideOf("A", a), sideOf("B", b), DefaultMinEffect)
	for range 3 {
		again := compareSides(sideOf("A", a), sideOf("B", b), DefaultMinEffect)
		for i := range first.changes {
			if x, y := first.changes[i].text(), again.changes[i].text(); x != y {
				t.Fatalf("two comparisons of the same runs differ: %q vs %q", x, y)
			}
		}
	}
}

// Seconds in which the generator started work late are left out and
// said so: a lagging generator is not a slower target.
func TestCompareLeavesOutGeneratorBoundIntervals(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	thirty := typical
	thirty.intervals = 30
	a, b := thirty.run(rng, 1, 1), thirty.run(rng, 1, 1)
	for i := 10; i < 26; i++ {
		b.Series.P50US[i] *= 10
		b.Series.P95US[i] *= 10
		b.Series.P99US[i] *= 10
		b.Series.LagP99US[i] = b.Series.P95US[i] / 2
	}
	v := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a), sideOf("B", b), DefaultMinEffect)}}, DefaultMinEffect)
	all := strings.Join(v.Findings, "\n")
	if v.Outcome != WithinNoise || strings.Contains(all, "worse: p50 ") ||
		!strings.Contains(all, "left out 16 intervals of B1 as generator-bound") || !strings.Contains(all, "rests on 30 and 14 one-second intervals") {
		t.Errorf("outcome %s, findings:\n%s\nwant the 16 lagging seconds left out and p50 not worse", v.Outcome, all)
	}
	// Counted in, the same seconds move the median tenfold: the test can
	// tell whether they were left out.
	for i := range b.Series.LagP99US {
		b.Series.LagP99US[i] = 0
	}
	v = verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", a), sideOf("B", b), DefaultMinEffect)}}, DefaultMinEffect)
	if all := strings.Join(v.Findings, "\n"); strings.Contains(all, "left out") || !strings.Contains(all, "worse: p50") {
		t.Errorf("with the lag gone the slow seconds count:\n%s", all)
	}
}

// Too few seconds to judge is said, and nothing is called.
func TestCompareTooFewIntervals(t *testing.T) {
	short := typical
	short.intervals = 4
	rng := rand.New(rand.NewPCG(9, 9))
	v := verdictOfSides([]sidesPart{{sidesBasis: compareSides(sideOf("A", short.run(rng, 1, 1)), sideOf("B", short.run(rng, 3, 1)), DefaultMinEffect)}}, DefaultMinEffect)
	if v.Outcome != NotJudged || !strings.Contains(strings.Join(v.Findings, "\n"), "p95: too few intervals (4 paired, need 5)") {
		t.Errorf("outcome %s, findings %q: want not judged, too few intervals", v.Outcome, v.Findings)
	}
}

// The block grows with the series' autocorrelation and stays 1 for
// independent seconds.
func TestBlockLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	series := func(phi float64) []float64 {
		x, e := make([]float64, 600), 0.0
		for i := range x {
			e = phi*e + rng.NormFloat64()
			x[i] = e
		}
		return x
	}
	white, slow := blockLength(series(0)), blockLength(series(0.9))
	if white > 3 || slow < 3*white || slow > 74 {
		t.Errorf("block length: %d for independent seconds, %d for φ = 0.9; want ≤ 3, then several times that and at most 3√n", white, slow)
	}
	if b := blockLength([]float64{5, 5, 5, 5, 5, 5}); b != 1 {
		t.Errorf("constant series: block %d, want 1", b)
	}
}

// The bootstrap's median by rank counting is the median of the resample.
func TestBootstrapMedianMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for _, n := range []int{5, 6, 31} {
		s := sampleSeries{num: make([]float64, n)}
		for i := range s.num {
			s.num[i] = float64(rng.IntN(20)) // ties on purpose
		}
		b := newBootstrapper(s)
		b.block = 3
		draws := rand.New(rand.NewPCG(1, 2))
		check := rand.New(rand.NewPCG(1, 2))
		for range 50 {
			got := b.draw(draws)
			var resample []float64
			for left := n; left > 0; left -= b.block {
				l, start := min(b.block, left), check.IntN(n)
				for k := range l {
					resample = append(resample, s.num[(start+k)%n])
				}
			}
			slices.Sort(resample)
			if want := median(resample); got != want {
				t.Fatalf("n %d: rank-count median %v, sorted median %v (%v)", n, got, want, resample)
			}
		}
	}
}

// BenchmarkCompareHourLongRuns is the cost of one verdict on two
// one-hour runs (3,600 seconds each): bounded by bootRounds, linear in
// the seconds.
func BenchmarkCompareHourLongRuns(b *testing.B) {
	hour := typical
	hour.intervals = 3600
	rng := rand.New(rand.NewPCG(17, 17))
	a, c := hour.run(rng, 1, 1), hour.run(rng, 1.05, 1)
	for b.Loop() {
		compareSides(sideOf("A", a), sideOf("B", c), DefaultMinEffect)
	}
}
