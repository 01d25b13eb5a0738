package report

import (
	"fmt"
	"github.com/stampede-load/stampede/internal/sample"
	"math"
	"sort"

	"github.com/stampede-load/stampede/internal/result"
)

// A generator-bound interval is one whose iterations started late by as
// much as the latencies in it: the same rule as gate.LagSuspect (lag p99
// over 1 ms and at least a quarter of the p95), applied per second, so
// that a run with a few bad seconds keeps the others.
const (
	intervalLagAboveUS   = 1000
	intervalLagShareOfUS = 4
	// edgeShare: an interval that runs past the measured end by more than
	// this share of its length is partial (grace period, the run's last
	// fraction of a second) and left out: its rate would read low.
	edgeShare = 0.1
)

// intervals is what one result's series gives a comparison: the kept
// intervals' figures per metric, and how many were left out and why.
type intervals struct {
	lat        [3]sampleSeries // per-interval p50, p95, p99 (intervals with a success)
	throughput sampleSeries    // requests over seconds
	errors     sampleSeries    // failures over requests
	// aligned holds, per interval of the series, p50, p95, p99 and
	// requests per second, NaN where the interval was left out (or had no
	// success, for the percentiles): two runs of one plan follow one
	// schedule, so their seconds pair up.
	aligned  [4][]float64
	kept     int
	lagBound int
	// noLag: the series has no lag figures (older results), so generator
	// lag can only be judged on the whole run.
	noLag bool
	step  float64
}

func intervalsOf(r *result.Result) intervals {
	s := r.Series
	step := s.IntervalS
	if step <= 0 {
		step = 1
	}
	iv := intervals{noLag: len(s.LagP99US) == 0, step: step}
	classes := make([]string, 0, len(s.Failed))
	for c := range s.Failed {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for k := range iv.aligned {
		iv.aligned[k] = make([]float64, len(s.T))
		for i := range iv.aligned[k] {
			iv.aligned[k][i] = math.NaN()
		}
	}
	for i, t := range s.T {
		if r.Run.DurationS > 0 && t+step > r.Run.DurationS+edgeShare*step {
			continue
		}
		ok := float64(at(s.OK, i))
		var failed, unsent float64
		for _, c := range classes {
			n := float64(at(s.Failed[c], i))
			failed += n
			if c == sample.Dropped.String() || c == sample.Interrupted.String() {
				// Never sent, or cut off: not served (result.Totals.Timed).
				unsent += n
			}
		}
		p := [3]int64{at(s.P50US, i), at(s.P95US, i), at(s.P99US, i)}
		if lag := at(s.LagP99US, i); lag > intervalLagAboveUS && lag*intervalLagShareOfUS >= p[1] {
			iv.lagBound++
			continue
		}
		iv.kept++
		iv.throughput.num = append(iv.throughput.num, ok+failed-unsent)
		iv.throughput.den = append(iv.throughput.den, step)
		iv.errors.num = append(iv.errors.num, failed)
		iv.errors.den = append(iv.errors.den, ok+failed)
		iv.aligned[3][i] = (ok + failed - unsent) / step
		if ok > 0 {
			for k := range p {
				iv.lat[k].num = append(iv.lat[k].num, float64(p[k]))
				iv.aligned[k][i] = float64(p[k])
			}
		}
	}
	return iv
}

func at(xs []int64, i int) int64 {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}

// metric is one figure a comparison judges.
type metric struct {
	name string
	// of picks the metric's per-interval series; nil for a figure that
	// exists only for the whole run (the mean latency).
	of func(*intervals) sampleSeries
	// paired is the metric's row in intervals.aligned, or -1: a rate of
	// rare events (failures) is compared unpaired, as a ratio of sums.
	paired int
	// whole is the run's figure when of is nil.
	whole func(*result.Result) (float64, bool)
	// points: the change is in percentage points of a rate, not relative
	// to the baseline (a failure rate may start at zero).
	points bool
	// upIsWorse: latency and failures; throughput is worse when it falls.
	upIsWorse bool
	// spread is how much one run's figure moves between identical runs
	// (a standard deviation, in log units): what one run a side cannot
	// see, so its interval takes it from measurement. See runSpread.
	spread float64
	format func(float64) string
}

// runSpread is the spread between identical runs that a comparison of
// one run a side adds to its interval, per metric, in log units. Measured
// with bench/compare-calibrate.sh: the quickstart plan run again and again
// against the demo on a 2-core machine loaded by stress-ng and other
// builds, where one run's median per-second p50 moved by 4.7 % (standard
// deviation), its p95 by 34 % and its p99 by 51 %, its throughput by
// 2.2 % (docs/benchmarks.md). The figures here are set by hand a little
// under those, since part of them is the noise within a run, which the
// bootstrap already counts. A tail percentile of a short run is a few
// requests, and moves with whatever else the machine does; repeats
// measure the spread instead.
var runSpread = struct{ p50, p95, p99, throughput float64 }{0.03, 0.25, 0.35, 0.02}

var compareMetrics = []metric{
	{name: "p50", of: func(iv *intervals) sampleSeries { return iv.lat[0] }, paired: 0, upIsWorse: true, spread: runSpread.p50, format: formatUS},
	{name: "p95", of: func(iv *intervals) sampleSeries { return iv.lat[1] }, paired: 1, upIsWorse: true, spread: runSpread.p95, format: formatUS},
	{name: "p99", of: func(iv *intervals) sampleSeries { return iv.lat[2] }, paired: 2, upIsWorse: true, spread: runSpread.p99, format: formatUS},
	{name: "mean", whole: meanLatency, paired: -1, upIsWorse: true, format: formatUS},
	{name: "throughput", of: func(iv *intervals) sampleSeries { return iv.throughput }, paired: 3, spread: runSpread.throughput, format: formatRate},
	{name: "error rate", of: func(iv *intervals) sampleSeries { return iv.errors }, paired: -1, points: true, upIsWorse: true, format: formatShare},
}

// pairedLogRatios are log(b/a) for the intervals both runs kept, second
// by second: what the plan's schedule does to a figure (a ramp, a step)
// it does to both runs alike, and drops out.
func pairedLogRatios(a, b *intervals, row int) sampleSeries {
	xa, xb := a.aligned[row], b.aligned[row]
	var d []float64
	for i := range min(len(xa), len(xb)) {
		if xa[i] > 0 && xb[i] > 0 { // false for NaN too
			d = append(d, math.Log(xb[i]/xa[i]))
		}
	}
	return sampleSeries{num: d}
}

func formatUS(us float64) string { return Duration(int64(math.Round(us))) }

func formatRate(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f req/s", x)
	}
	return fmt.Sprintf("%.1f req/s", x)
}

func formatShare(x float64) string { return fmt.Sprintf("%.2f %%", x*100) }

// meanLatency is the run's mean over successful requests, recomputed from
// its histogram: the series keeps no per-second mean, so this figure is
// judged only with repeats, the runs being its samples.
func meanLatency(r *result.Result) (float64, bool) {
	h, err := r.Totals.LatencyOK.Histogram()
	if err != nil || h.TotalCount() == 0 {
		return 0, false
	}
	return h.Mean(), true
}
