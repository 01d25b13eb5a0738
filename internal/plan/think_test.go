package plan

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func thinkStep(t *testing.T, think string) *ThinkDist {
	t.Helper()
	src := "target: demo\nscenarios: {s: {steps: [{get: /}, {think: " + think + "}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	p, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatalf("%s: %v", think, err)
	}
	st := p.Scenarios[0].Steps[1]
	if st.Dist == nil {
		t.Fatalf("%s: no distribution", think)
	}
	if st.ThinkMin != st.Dist.Mean || st.ThinkMax != st.Dist.Mean {
		t.Fatalf("%s: ThinkMin/ThinkMax %v/%v, want both the mean %v", think, st.ThinkMin, st.ThinkMax, st.Dist.Mean)
	}
	return st.Dist
}

// TestThinkDistributions draws many samples from a seeded generator and
// checks what defines each distribution: mean and spread, the share of
// draws below a point, and the clamps. With 200,000 draws the sample mean
// is within a few tenths of a percent of the true one, so the 3%
// tolerances fail only on a wrong formula, never on chance (the seed is
// fixed, so the outcome does not vary between runs either).
func TestThinkDistributions(t *testing.T) {
	const n = 200000
	stats := func(d *ThinkDist) (mean, sd float64, zeros, capped int, xs []float64) {
		r := rand.New(rand.NewPCG(7, 11))
		xs = make([]float64, n)
		var sum float64
		for i := range xs {
			v := d.Draw(r)
			if v < 0 {
				t.Fatalf("negative draw %v", v)
			}
			if v == 0 {
				zeros++
			}
			if d.Max > 0 && v == d.Max {
				capped++
			}
			xs[i] = v.Seconds()
			sum += xs[i]
		}
		mean = sum / n
		for _, x := range xs {
			sd += (x - mean) * (x - mean)
		}
		return mean, math.Sqrt(sd / n), zeros, capped, xs
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.03*want {
			t.Errorf("%s = %.4f, want %.4f within 3%%", what, got, want)
		}
	}
	below := func(xs []float64, x float64) float64 {
		c := 0
		for _, v := range xs {
			if v < x {
				c++
			}
		}
		return float64(c) / float64(len(xs))
	}

	t.Run("exponential", func(t *testing.T) {
		d := thinkStep(t, "{exponential: 2s}")
		mean, sd, _, _, xs := stats(d)
		near("mean", mean, 2)
		near("sd", sd, 2)
		// Memoryless: P(X < mean) = 1 - 1/e.
		near("P(X<2s)", below(xs, 2), 1-math.Exp(-1))
	})
	t.Run("normal", func(t *testing.T) {
		d := thinkStep(t, "{normal: 2s, sd: 500ms}")
		mean, sd, zeros, _, xs := stats(d)
		near("mean", mean, 2)
		near("sd", sd, 0.5)
		near("P(X<1.5s)", below(xs, 1.5), 0.158655) // one sd below
		// Zero is 4 sd below the mean: about 6 of 200,000 raw draws.
		if zeros > 30 {
			t.Errorf("%d zero draws at 4 sd below the mean, want about 6", zeros)
		}
	})
	t.Run("normal clamped at zero", func(t *testing.T) {
		// sd = mean: about 15.9% of raw draws fall below zero.
		d := thinkStep(t, "{normal: 1s, sd: 1s}")
		_, _, zeros, _, _ := stats(d)
		near("share clamped to zero", float64(zeros)/n, 0.158655)
	})
	t.Run("lognormal", func(t *testing.T) {
		d := thinkStep(t, "{lognormal: 2s, sd: 1s}")
		mean, sd, _, _, xs := stats(d)
		near("mean", mean, 2)
		near("sd", sd, 1)
		// The median is mean / sqrt(1 + sd²/mean²).
		near("P(X<median)", below(xs, 2/math.Sqrt(1.25)), 0.5)
	})
	t.Run("max caps the tail", func(t *testing.T) {
		d := thinkStep(t, "{exponential: 1s, max: 3s}")
		_, _, _, capped, xs := stats(d)
		near("share capped", float64(capped)/n, math.Exp(-3))
		for _, x := range xs {
			if x > 3 {
				t.Fatalf("draw %vs above max 3s", x)
			}
		}
	})
}

// TestThinkDrawDeterministic: one seed gives one sequence, so a user's
// think times repeat from run to run, and a draw costs no allocation.
func TestThinkDrawDeterministic(t *testing.T) {
	d := thinkStep(t, "{lognormal: 2s, sd: 1s}")
	a, b := rand.New(rand.NewPCG(3, 0x5eed)), rand.New(rand.NewPCG(3, 0x5eed))
	for i := 0; i < 1000; i++ {
		if x, y := d.Draw(a), d.Draw(b); x != y {
			t.Fatalf("draw %d: %v and %v from the same seed", i, x, y)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []string{"{exponential: 2s}", "{normal: 2s, sd: 500ms}", "{lognormal: 2s, sd: 1s, max: 5s}"} {
		d := thinkStep(t, k)
		if allocs := testing.AllocsPerRun(1000, func() { d.Draw(r) }); allocs != 0 {
			t.Errorf("%s: %v allocs per draw, want 0", k, allocs)
		}
	}
}

// TestThinkDrawClamps feeds Draw extreme normal and exponential values.
func TestThinkDrawClamps(t *testing.T) {
	for _, tc := range []struct {
		d    ThinkDist
		r    drawRand
		want time.Duration
	}{
		{ThinkDist{Kind: ThinkNormal, Mean: time.Second, SD: time.Second}, drawRand{norm: -5}, 0},
		{ThinkDist{Kind: ThinkNormal, Mean: time.Second, SD: time.Second}, drawRand{norm: math.NaN()}, 0},
		{ThinkDist{Kind: ThinkExponential, Mean: time.Hour}, drawRand{exp: 1e12}, math.MaxInt64},
		{ThinkDist{Kind: ThinkExponential, Mean: time.Hour, Max: 2 * time.Hour}, drawRand{exp: 1e12}, 2 * time.Hour},
	} {
		if got := tc.d.Draw(tc.r); got != tc.want {
			t.Errorf("%v with %+v: got %v, want %v", tc.d.Kind, tc.r, got, tc.want)
		}
	}
}

type drawRand struct{ exp, norm float64 }

func (f drawRand) ExpFloat64() float64  { return f.exp }
func (f drawRand) NormFloat64() float64 { return f.norm }

func TestThinkDistOnlyWhereWritten(t *testing.T) {
	src := "target: demo\nscenarios: {s: {steps: [{get: /}, {think: 1s..2s}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	p, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := p.Scenarios[0].Steps[1]; st.Dist != nil || st.ThinkMin != time.Second || st.ThinkMax != 2*time.Second {
		t.Fatalf("range think changed: %+v", st)
	}
	if !strings.Contains(ThinkLogNormal.String(), "lognormal") {
		t.Fatal(ThinkLogNormal.String())
	}
}

// A drawn pace keeps its distribution and gives Pace its mean, which what
// reads the average pace (capacity estimates, the users' phase spread)
// uses as it uses a fixed pace.
func TestPaceDistribution(t *testing.T) {
	src := "target: demo\nscenarios: {s: {steps: [{get: /}]}}\nload: {pace: {lognormal: 2s, sd: 1s, max: 8s}, stages: [{duration: 1s, users: 1}]}\n"
	p, err := Parse("t.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Load.PaceDist
	if d == nil || d.Kind != ThinkLogNormal || d.Mean != 2*time.Second || d.SD != time.Second || d.Max != 8*time.Second || p.Load.Pace != 2*time.Second {
		t.Fatalf("pace %v, dist %+v", p.Load.Pace, d)
	}
	fixed, err := Parse("t.yaml", []byte(strings.Replace(src, "{lognormal: 2s, sd: 1s, max: 8s}", "2s", 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Load.PaceDist != nil || fixed.Load.Pace != 2*time.Second {
		t.Fatalf("fixed pace %v, dist %+v", fixed.Load.Pace, fixed.Load.PaceDist)
	}
}
