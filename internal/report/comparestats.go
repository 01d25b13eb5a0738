package report

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// The statistics behind a comparison's verdict. A run's requests are not
// independent samples — a slow second slows every request in it, and the
// whole run shares one state of the machine — so the unit here is the
// interval (one second of the series) within a run, and the run itself
// when there are repeats:
//
//   - one run a side: each metric is compared over the runs' intervals.
//     Latencies and throughput are paired second by second — two runs of
//     one plan follow one schedule, so what a ramp or a step does to a
//     figure drops out of the log ratio of the two runs' seconds — and
//     the change is the median of those ratios; the failure rate, a rate
//     of rare events, is compared as each run's ratio of sums. The
//     interval comes from a circular block bootstrap of the intervals
//     (neighbouring seconds, which move together, are resampled
//     together), its 0.5 % and 99.5 % quantiles, widened by the spread
//     between identical runs that one run a side cannot show
//     (runSpread, measured);
//   - two or more runs a side: each run gives one figure, and the interval
//     is a Welch t interval over the runs' figures (on logarithms for a
//     relative change), so the spread between runs is measured rather
//     than assumed.
//
// A change counts only when its interval excludes no change and it is at
// least the minimum practical effect (DefaultMinEffect, --min-effect); it
// is no change only when its whole interval lies within ±the minimum
// effect, and unclear otherwise (change.decide). Identical runs
// on a shared machine differ by as much as 11 % in p50
// (bench/compare-calibrate.sh), and a change smaller than that is not one
// to act on from a single pair of runs, however sure its interval.
const (
	// bootRounds bounds the work: 2,000 resamples give the 0.5 % and
	// 99.5 % quantiles from ten draws each.
	bootRounds = 2000
	// confidence of every interval. Five metrics are judged per
	// comparison; 99 % keeps the chance that any of them is called by
	// sampling noise alone near 5 %.
	confidence = 0.99
	// minIntervals: fewer usable intervals a side are too few to judge.
	minIntervals = 5
)

// sampleSeries is one metric's per-interval values in one run: num alone
// (latency percentiles, whose figure is their median) or num over den
// (requests over seconds, failures over requests: the figure is the ratio
// of the sums, which is the run's own rate over those intervals).
type sampleSeries struct {
	num, den []float64
}

func (s sampleSeries) ratio() bool { return s.den != nil }

func (s sampleSeries) len() int { return len(s.num) }

// figure is the metric over all of the series' intervals.
func (s sampleSeries) figure() float64 {
	if s.ratio() {
		return sum(s.num) / nonZero(sum(s.den))
	}
	return median(s.num)
}

// values is what the block length is chosen from: the per-interval figure.
func (s sampleSeries) values() []float64 {
	if !s.ratio() {
		return s.num
	}
	v := make([]float64, len(s.num))
	for i := range v {
		if s.den[i] > 0 {
			v[i] = s.num[i] / s.den[i]
		}
	}
	return v
}

func sum(xs []float64) float64 {
	var t float64
	for _, x := range xs {
		t += x
	}
	return t
}

func nonZero(x float64) float64 {
	if x == 0 {
		return math.SmallestNonzeroFloat64
	}
	return x
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}

// bootstrapper draws circular-block resamples of one series and gives the
// figure of each. Medians are taken by rank counting, so one resample
// costs O(n) whatever the run's length.
type bootstrapper struct {
	s     sampleSeries
	block int
	// rank[i] is the position of num[i] in sorted (ties broken by index).
	rank   []int
	sorted []float64
	// prefix sums of num and den over the series laid twice, so a block
	// that wraps is one subtraction.
	pn, pd []float64
	counts []int
}

func newBootstrapper(s sampleSeries) *bootstrapper {
	n := s.len()
	b := &bootstrapper{s: s, block: blockLength(s.values())}
	if s.ratio() {
		b.pn, b.pd = make([]float64, 2*n+1), make([]float64, 2*n+1)
		for i := range 2 * n {
			b.pn[i+1] = b.pn[i] + s.num[i%n]
			b.pd[i+1] = b.pd[i] + s.den[i%n]
		}
		return b
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, c int) int {
		switch {
		case s.num[a] < s.num[c]:
			return -1
		case s.num[a] > s.num[c]:
			return 1
		}
		return 0
	})
	b.rank, b.sorted, b.counts = make([]int, n), make([]float64, n), make([]int, n)
	for r, i := range idx {
		b.rank[i], b.sorted[r] = r, s.num[i]
	}
	return b
}

// draw returns the figure of one resample: ⌈n/block⌉ blocks at random
// starts, wrapping around the end, cut to n intervals.
func (b *bootstrapper) draw(rng *rand.Rand) float64 {
	n := b.s.len()
	if b.s.ratio() {
		var num, den float64
		for left := n; left > 0; left -= b.block {
			l, start := min(b.block, left), rng.IntN(n)
			num += b.pn[start+l] - b.pn[start]
			den += b.pd[start+l] - b.pd[start]
		}
		return num / nonZero(den)
	}
	clear(b.counts)
	for left := n; left > 0; left -= b.block {
		l, start := min(b.block, left), rng.IntN(n)
		for k := range l {
			b.counts[b.rank[(start+k)%n]]++
		}
	}
	lo, hi := (n-1)/2, n/2
	var vlo, vhi float64
	seen := 0
	for r, c := range b.counts {
		if c == 0 {
			continue
		}
		if seen <= lo && lo < seen+c {
			vlo = b.sorted[r]
		}
		if seen <= hi && hi < seen+c {
			vhi = b.sorted[r]
			break
		}
		seen += c
	}
	return (vlo + vhi) / 2
}

// blockLength chooses the block for the circular block bootstrap from the
// series' autocorrelation, by the rule of Politis and White (2004) as
// corrected by Patton, Politis and White (2009): the lag window's width
// is twice the first lag after which K autocorrelations in a row are
// negligible (under 2·√(log10 n / n)), and the block is
// (2·G² / D)^(1/3) · n^(1/3), at least 1 and at most min(3√n, n/3).
func blockLength(x []float64) int {
	n := len(x)
	if n < 4 {
		return 1
	}
	mean := sum(x) / float64(n)
	acov := func(k int) float64 {
		var s float64
		for i := k; i < n; i++ {
			s += (x[i] - mean) * (x[i-k] - mean)
		}
		return s / float64(n)
	}
	r0 := acov(0)
	if r0 == 0 {
		return 1
	}
	kn := max(5, int(math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	crit := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	maxLag := min(n-1, int(math.Ceil(math.Sqrt(float64(n))))+kn)
	m, run := maxLag, 0
	for k := 1; k <= maxLag; k++ {
		if math.Abs(acov(k)/r0) < crit {
			run++
			if run == kn {
				m = k - kn + 1
				break
			}
		} else {
			run = 0
		}
	}
	width := min(2*max(m, 1), n-1)
	var g, g0 float64
	for k := -width; k <= width; k++ {
		w := flatTop(float64(k) / float64(width))
		r := acov(abs(k))
		g += w * float64(abs(k)) * r
		g0 += w * r
	}
	d := 4.0 / 3.0 * g0 * g0
	if d == 0 {
		return 1
	}
	b := math.Cbrt(2*g*g/d) * math.Cbrt(float64(n))
	upper := math.Min(3*math.Sqrt(float64(n)), float64(n)/3)
	return int(math.Max(1, math.Min(math.Ceil(b), upper)))
}

func flatTop(t float64) float64 {
	t = math.Abs(t)
	switch {
	case t <= 0.5:
		return 1
	case t <= 1:
		return 2 * (1 - t)
	}
	return 0
}

func abs(k int) int {
	if k < 0 {
		return -k
	}
	return k
}

// seedOf makes the bootstrap's random stream from the data it resamples,
// so the same files always give the same verdict.
func seedOf(series ...sampleSeries) (uint64, uint64) {
	h := fnv.New64a()
	var buf [8]byte
	for _, s := range series {
		for _, xs := range [][]float64{s.num, s.den} {
			binary.LittleEndian.PutUint64(buf[:], uint64(len(xs)))
			h.Write(buf[:])
			for _, x := range xs {
				binary.LittleEndian.PutUint64(buf[:], math.Float64bits(x))
				h.Write(buf[:])
			}
		}
	}
	s := h.Sum64()
	return s, s ^ 0x9e3779b97f4a7c15
}

// zQuantile995 is the normal quantile of a two-sided 99 % interval.
const zQuantile995 = 2.576

// tQuantile995 is Student's t at 0.995 (a two-sided 99 % interval) for df
// degrees of freedom, rounded down to the table's row (wider, never
// narrower).
func tQuantile995(df float64) float64 {
	table := []struct {
		df float64
		t  float64
	}{
		{1, 63.657}, {2, 9.925}, {3, 5.841}, {4, 4.604}, {5, 4.032}, {6, 3.707},
		{7, 3.499}, {8, 3.355}, {9, 3.250}, {10, 3.169}, {12, 3.055}, {15, 2.947},
		{20, 2.845}, {25, 2.787}, {30, 2.750}, {40, 2.704}, {60, 2.660}, {120, 2.617},
	}
	t := table[0].t
	for _, row := range table {
		if df >= row.df {
			t = row.t
		}
	}
	if df >= 1000 {
		t = zQuantile995
	}
	return t
}
