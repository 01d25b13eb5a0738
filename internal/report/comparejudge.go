package report

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/result"
)

// Outcome is a comparison's verdict on one run (or one side of repeats)
// against the baseline.
type Outcome string

const (
	Baseline    Outcome = "baseline"
	Better      Outcome = "better"
	Worse       Outcome = "worse"
	WithinNoise Outcome = "within noise"
	// NotJudged: nothing could be compared — different plans or models, a
	// partial run, too few intervals, or a generator that lagged.
	NotJudged Outcome = "not judged"
)

// Verdict is the outcome and the findings behind it, worst first.
type Verdict struct {
	Outcome  Outcome
	Findings []string
}

// DefaultMinEffect is the smallest change a verdict counts, as a share of
// the baseline's figure. Measured with bench/compare-calibrate.sh (the
// quickstart plan, identical runs on a loaded 2-core machine): docs/
// benchmarks.md "Compare: false alarms and power".
const DefaultMinEffect = 0.10

// minFailMovePP: a failure rate that moved by less than 0.1 percentage
// points is no change, whatever its share of a tiny rate.
const minFailMovePP = 0.001

// Calls on one metric.
const (
	callWorse   = "worse"
	callBetter  = "better"
	callNone    = "no change"
	callUnclear = "unclear"
)

// change is one metric of one comparison: the figures of each side, the
// change and its interval, and the call made on it (or why none was).
type change struct {
	m              metric
	a, b           float64
	est, lo, hi    float64
	call, notJudge string
	// figuresAre names what a and b are when they are not the table's
	// whole-run figure: see figuresLabel.
	figuresAre string
	// repeated: the sides are repeats, so the advice on an unclear call
	// is more runs, not --vs.
	repeated bool
}

// figuresLabel names the verdict's latency figures. They are the figure
// the interval is around — the median of the per-second percentiles, and
// with repeats the geometric mean of each run's — not the whole-run
// percentile of the table above them (2.5ms beside the table's 2.529ms):
// the whole-run figure has no interval of its own, and printing it beside
// an interval around another figure would misstate what was judged. So
// the figure stays and says what it is.
func figuresLabel(m metric, repeated bool) string {
	if m.points || m.of == nil || m.paired < 0 || m.paired > 2 {
		return ""
	}
	if repeated {
		return "per-second median, geometric mean of the runs"
	}
	return "per-second median"
}

// labelled is a result and the name the output gives it.
type labelled struct {
	label string
	r     *result.Result
}

// sidesBasis says what a comparison of two sides rested on.
type sidesBasis struct {
	changes []change
	basis   string
	notes   []string
	// notJudged, when set, is why nothing of the two sides was compared.
	notJudged string
}

// compareSides judges b against a, one run a side or repeats.
func compareSides(a, b []labelled, minEffect float64) sidesBasis {
	ivA, ivB := make([]intervals, len(a)), make([]intervals, len(b))
	var out sidesBasis
	var p95 int64
	for _, x := range append(slices.Clone(a), b...) {
		p95 = max(p95, x.r.Totals.LatencyOK.P95US)
	}
	for _, side := range []struct {
		runs []labelled
		ivs  []intervals
	}{{a, ivA}, {b, ivB}} {
		for i, x := range side.runs {
			side.ivs[i] = intervalsOf(x.r)
			iv := side.ivs[i]
			if iv.noLag {
				if why, ok := gate.LagSuspect(x.r, p95); ok {
					out.notJudged = x.label + "'s " + why
					return out
				}
			}
			if iv.lagBound > 0 {
				out.notes = append(out.notes, fmt.Sprintf("left out %s of %s as generator-bound (lag p99 over 1ms and at least a quarter of the interval's p95)",
					plural(iv.lagBound, "interval"), x.label))
			}
		}
	}
	if len(a) == 1 && len(b) == 1 {
		out.changes, out.basis = singleChanges(ivA[0], ivB[0], minEffect)
	} else {
		out.changes = repeatChanges(a, b, ivA, ivB, minEffect)
		out.basis = fmt.Sprintf("%d and %d runs, each run one sample (99 %% Welch t intervals over the runs' figures)", len(a), len(b))
	}
	return out
}

// singleChanges compares one run a side over their intervals: latencies
// and throughput second by second (the median of the paired log ratios),
// the failure rate as a ratio of sums.
func singleChanges(ivA, ivB intervals, minEffect float64) ([]change, string) {
	var out []change
	blocks := map[int]bool{}
	pairs := 0
	for _, m := range compareMetrics {
		if m.of == nil {
			continue // a whole-run figure has one sample a run
		}
		sa, sb := m.of(&ivA), m.of(&ivB)
		c := change{m: m, a: sa.figure(), b: sb.figure(), figuresAre: figuresLabel(m, false)}
		var iv bootInterval
		if m.paired >= 0 {
			d := pairedLogRatios(&ivA, &ivB, m.paired)
			pairs = max(pairs, d.len())
			iv = pairedChange(d)
		} else {
			iv = unpairedChange(m, sa, sb)
		}
		if c.notJudge = iv.why; iv.why == "" {
			blocks[iv.block] = true
			// The two runs' own spread, which neither shows, widens the
			// interval: each run moves by m.spread, their difference by √2
			// times that.
			sp := zQuantile995 * math.Sqrt2 * m.spread
			c.setInterval(iv.est, iv.est-math.Hypot(iv.est-iv.lo, sp), iv.est+math.Hypot(iv.hi-iv.est, sp))
			c.decide(minEffect)
		}
		out = append(out, c)
	}
	var bs []int
	for b := range blocks {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	unit := fmt.Sprintf("%gs", ivA.step)
	if ivA.step == 1 {
		unit = "one-second"
	}
	basis := fmt.Sprintf("%d and %d %s intervals, %d paired (99 %% intervals from a circular block bootstrap", ivA.kept, ivB.kept, unit, pairs)
	if len(bs) > 0 {
		basis += ", blocks of " + rangeText(bs[0], bs[len(bs)-1])
	}
	return out, basis + fmt.Sprintf(", widened by the spread between identical runs: ±%.0f %% on p50, ±%.0f %% on p95, ±%.0f %% on p99, ±%.0f %% on throughput)",
		runSpread.p50*100, runSpread.p95*100, runSpread.p99*100, runSpread.throughput*100)
}

// bootInterval is a change on its metric's scale, the 99 % interval of
// its bootstrap (the 0.5 % and 99.5 % quantiles), the block used, or why
// none could be drawn.
type bootInterval struct {
	est, lo, hi float64
	block       int
	why         string
}

// pairedChange is the median of the paired log ratios and its interval:
// a percentile interval, which keeps the bootstrap's own shape (two runs
// whose every second differs give a lopsided one).
func pairedChange(d sampleSeries) bootInterval {
	if d.len() < minIntervals {
		return bootInterval{why: fmt.Sprintf("too few intervals (%d paired, need %d)", d.len(), minIntervals)}
	}
	b := newBootstrapper(d)
	rng := rand.New(rand.NewPCG(seedOf(d)))
	draws := make([]float64, bootRounds)
	for i := range draws {
		draws[i] = b.draw(rng)
	}
	lo, hi := percentiles(draws)
	return bootInterval{est: d.figure(), lo: lo, hi: hi, block: b.block}
}

// unpairedChange compares two runs' ratios of sums, each resampled in
// blocks of its own.
func unpairedChange(m metric, sa, sb sampleSeries) bootInterval {
	switch {
	case sa.len() < minIntervals || sb.len() < minIntervals:
		return bootInterval{why: fmt.Sprintf("too few intervals (%d and %d, need %d)", sa.len(), sb.len(), minIntervals)}
	case sum(sa.den) == 0 || sum(sb.den) == 0:
		return bootInterval{why: "no requests on one side"}
	}
	ba, bb := newBootstrapper(sa), newBootstrapper(sb)
	rng := rand.New(rand.NewPCG(seedOf(sa, sb)))
	draws := make([]float64, bootRounds)
	for i := range draws {
		draws[i] = m.scale(bb.draw(rng)) - m.scale(ba.draw(rng))
	}
	lo, hi := percentiles(draws)
	return bootInterval{est: m.scale(sb.figure()) - m.scale(sa.figure()), lo: lo, hi: hi, block: max(ba.block, bb.block)}
}

// percentiles are the bounds of the central 99 % of draws (sorted here).
func percentiles(draws []float64) (lo, hi float64) {
	slices.Sort(draws)
	tail := int(math.Round((1 - confidence) / 2 * float64(len(draws))))
	return draws[tail], draws[len(draws)-1-tail]
}

func rangeText(lo, hi int) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// scale is where a metric's changes add up: logarithms for a relative
// change (a doubling and a halving are the same size), the rate itself
// for points.
func (m metric) scale(x float64) float64 {
	if m.points {
		return x
	}
	return math.Log(math.Max(x, math.SmallestNonzeroFloat64))
}

// setInterval sets the change d in [lo, hi] on the metric's scale, and
// reports it as the relative change or points.
func (c *change) setInterval(d, lo, hi float64) {
	if c.m.points {
		c.est, c.lo, c.hi = d, lo, hi
		return
	}
	c.est, c.lo, c.hi = math.Expm1(d), math.Expm1(lo), math.Expm1(hi)
}

// repeatChanges compares two sides of repeated runs, each run one sample.
func repeatChanges(a, b []labelled, ivA, ivB []intervals, minEffect float64) []change {
	var out []change
	for _, m := range compareMetrics {
		c := change{m: m, figuresAre: figuresLabel(m, true), repeated: true}
		xa, whyA := runFigures(m, a, ivA)
		xb, whyB := runFigures(m, b, ivB)
		if why := cmp.Or(whyA, whyB); why != "" {
			c.notJudge = why
			out = append(out, c)
			continue
		}
		ma, va := sideMean(xa)
		mb, vb := sideMean(xb)
		c.a, c.b = ma, mb
		if !m.points {
			c.a, c.b = math.Exp(ma), math.Exp(mb)
		}
		half := tQuantile995(welchDF(va, vb, len(xa)-1, len(xb)-1)) * math.Sqrt(va+vb)
		c.setInterval(mb-ma, mb-ma-half, mb-ma+half)
		c.decide(minEffect)
		out = append(out, c)
	}
	return out
}

// runFigures gives each run's figure, the log of it for a relative
// metric.
func runFigures(m metric, runs []labelled, ivs []intervals) (x []float64, why string) {
	for i, run := range runs {
		var f float64
		if m.of == nil {
			v, ok := m.whole(run.r)
			if !ok {
				return nil, run.label + " has no figure"
			}
			f = v
		} else {
			s := m.of(&ivs[i])
			if s.len() < minIntervals {
				return nil, fmt.Sprintf("too few intervals in %s (%d, need %d)", run.label, s.len(), minIntervals)
			}
			if s.ratio() && sum(s.den) == 0 {
				return nil, run.label + " has no requests"
			}
			f = s.figure()
		}
		if !m.points {
			if f <= 0 {
				return nil, run.label + "'s figure is zero"
			}
			f = math.Log(f)
		}
		x = append(x, f)
	}
	return x, ""
}

// sideMean is the mean of a side's run figures and the variance of that
// mean, from the spread between the runs.
func sideMean(x []float64) (mean, variance float64) {
	n := float64(len(x))
	mean = sum(x) / n
	var ss float64
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, ss / (n - 1) / n
}

// welchDF is the Welch–Satterthwaite degrees of freedom.
func welchDF(va, vb float64, dfa, dfb int) float64 {
	den := va*va/float64(dfa) + vb*vb/float64(dfb)
	if den == 0 {
		return float64(dfa + dfb)
	}
	return (va + vb) * (va + vb) / den
}

// decide makes the call. No change only when the whole interval lies
// within ±the minimum effect: an interval that reaches past it leaves a
// change that matters possible, and "no change" from the point estimate
// alone would be a claim the runs cannot back (a p95 of −3.8 % [−64 %,
// +141 %]). Worse or better when the interval excludes no change and the
// estimate is at least the minimum effect; unclear otherwise.
//
// Worse or better do not also ask the whole interval to clear the
// minimum effect: one run a side widens a p50 interval by ±11 % for the
// spread between runs, so with a 10 % minimum effect no single pair could
// ever be called on p50 for a 20 % change (on synthetic runs, 29 of 150
// pairs 20 % slower were called worse that way, against the ≥ 95 % the
// calibration asks). An interval that excludes no change is already a
// change at 99 %; the minimum effect keeps small sure ones from counting.
// A file against itself (a change of zero) is never worse or better.
func (c *change) decide(minEffect float64) {
	limit := c.effectLimit(minEffect)
	switch {
	case c.lo >= -limit && c.hi <= limit:
		c.call = callNone
	case (c.lo > 0 || c.hi < 0) && math.Abs(c.est) >= limit:
		if (c.est > 0) == c.m.upIsWorse {
			c.call = callWorse
		} else {
			c.call = callBetter
		}
	default:
		c.call = callUnclear
	}
}

// effectLimit is the minimum effect on the change's own scale: a share
// of the baseline for a relative change; for a rate in points, that
// share of the larger rate but never under minFailMovePP.
func (c change) effectLimit(minEffect float64) float64 {
	if c.m.points {
		return math.Max(minFailMovePP, minEffect*math.Max(c.a, c.b))
	}
	return minEffect
}

// decisiveAdvice is what narrows an unclear interval.
func (c change) decisiveAdvice() string {
	if c.repeated {
		return "run longer or add runs to each side"
	}
	return "run longer or repeat (--vs)"
}

// effectLimitText prints effectLimit: "±10 %", "±0.10 pp".
func (c change) effectLimitText(minEffect float64) string {
	if c.m.points {
		return fmt.Sprintf("±%.2f pp", c.effectLimit(minEffect)*100)
	}
	return "±" + minEffectText(minEffect)
}

// text is the change as the verdict prints it: "p95 +12 % [+7.0 %, +18 %]
// (per-second median: 62.271ms → 69.8ms)".
func (c change) text() string {
	if c.notJudge != "" {
		return c.m.name + ": " + c.notJudge
	}
	var eff string
	if c.m.points {
		eff = fmt.Sprintf("%s %+.2f pp [%+.2f, %+.2f]", c.m.name, c.est*100, c.lo*100, c.hi*100)
	} else {
		eff = fmt.Sprintf("%s %s [%s, %s]", c.m.name, relPct(c.est), relPct(c.lo), relPct(c.hi))
	}
	figures := c.m.format(c.a) + " → " + c.m.format(c.b)
	if c.figuresAre != "" {
		figures = c.figuresAre + ": " + figures
	}
	return fmt.Sprintf("%s (%s)", eff, figures)
}

func relPct(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+∞ %"
	case math.Abs(x) < 0.1:
		return fmt.Sprintf("%+.1f %%", x*100)
	}
	return fmt.Sprintf("%+.0f %%", x*100)
}

// verdictOfSides turns one or more comparisons (the totals, or each
// level, each with its prefix) into a verdict: worse if anything got
// worse, better if something improved and nothing got worse, within
// noise if something was judged, not judged otherwise.
func verdictOfSides(parts []sidesPart, minEffect float64) Verdict {
	var worse, better, basis, quiet, unjudged []string
	judged := false
	for _, p := range parts {
		if p.notJudged != "" {
			unjudged = append(unjudged, p.prefix+"not judged: "+p.notJudged)
			continue
		}
		if p.basis != "" {
			basis = append(basis, p.prefix+"rests on "+p.basis)
		}
		for _, n := range p.notes {
			basis = append(basis, p.prefix+n)
		}
		for _, c := range p.changes {
			line := p.prefix + c.text()
			switch c.call {
			case callWorse:
				worse = append(worse, "worse: "+line)
			case callBetter:
				better = append(better, "better: "+line)
			case callNone:
				quiet = append(quiet, fmt.Sprintf("no change: %s, the interval lies within the %s minimum effect", line, c.effectLimitText(minEffect)))
			case callUnclear:
				quiet = append(quiet, fmt.Sprintf("unclear: %s, the interval spans the %s minimum effect; %s", line, c.effectLimitText(minEffect), c.decisiveAdvice()))
			default:
				unjudged = append(unjudged, "not judged: "+line)
			}
			judged = judged || c.call != ""
		}
	}
	v := Verdict{Outcome: NotJudged}
	switch {
	case len(worse) > 0:
		v.Outcome = Worse
	case len(better) > 0:
		v.Outcome = Better
	case judged:
		v.Outcome = WithinNoise
	}
	v.Findings = slices.Concat(worse, better, quiet, basis, unjudged)
	return v
}

// sidesPart is one comparison within a verdict, with what names it.
type sidesPart struct {
	sidesBasis
	prefix string
}

// minEffectText prints a minimum effect: "10 %", "2.5 %".
func minEffectText(x float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", x*100), "0"), ".")
	return s + " %"
}
