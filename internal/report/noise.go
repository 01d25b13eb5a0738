package report

import (
	"fmt"
	"math"
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The comparison verdict — better, worse or within noise — follows one
// rule, written out in the README's "Reports" section:
//
// Latency is compared over successful requests, on the whole histograms
// rather than on a few percentiles:
//   - the body with a Mann-Whitney U test computed exactly from the two
//     HDR histograms (values in one bucket count as ties). Its effect size
//     is Cliff's delta, P(B > A) − P(B < A): 0 when neither run is slower,
//     +1 when every request of B was slower than every request of A;
//   - the tail at p95 and p99: the share of B's requests slower than A's
//     p95 (p99) against A's own share, by a two-proportion z-test. This
//     catches a tail that grows while the median stays put.
//
// Failures are compared by the failure rate, also by a two-proportion
// z-test.
//
// A difference counts only when it is both clear and large enough to
// matter. Clear means |z| ≥ 3.29 (two-sided p < 0.001): requests in a load
// test are not independent samples — a slow second slows every request in
// it — so the effective sample size is far below the request count and a
// textbook 1.96 would call ordinary run-to-run jitter a change. Large
// enough means |δ| ≥ 0.1 for the body, a percentile that moved by at least
// 10% for the tail, and for failures a rate that moved by at least 0.1
// percentage points and by at least a quarter of the larger rate. A run is
// worse if anything got worse, better if something improved and nothing
// got worse, and within noise otherwise. Fewer than minSamples successful
// requests in either run are too few to judge latency.
const (
	zClear          = 3.29
	minDelta        = 0.1
	minTailMove     = 0.10
	minFailMovePP   = 0.001
	minFailMoveRel  = 0.25
	minSamples      = 30
	tailPercentileA = 95.0
	tailPercentileB = 99.0
)

// Outcome is a comparison's verdict on one run against the baseline.
type Outcome string

const (
	Baseline    Outcome = "baseline"
	Better      Outcome = "better"
	Worse       Outcome = "worse"
	WithinNoise Outcome = "within noise"
)

// Verdict is the outcome and the findings behind it, worst first.
type Verdict struct {
	Outcome  Outcome
	Findings []string
}

// mannWhitney compares b against a. delta is Cliff's delta (positive: b is
// slower); z is the U statistic's normal score with the tie correction.
func mannWhitney(a, b *hdr.Histogram) (delta, z float64) {
	na, nb := float64(a.TotalCount()), float64(b.TotalCount())
	if na == 0 || nb == 0 {
		return 0, 0
	}
	// Both histograms share one geometry, so a bucket's lowest value
	// identifies the same bucket in each.
	type cell struct{ a, b float64 }
	cells := map[int64]*cell{}
	for _, bar := range a.Distribution() {
		if bar.Count > 0 {
			cells[bar.From] = &cell{a: float64(bar.Count)}
		}
	}
	for _, bar := range b.Distribution() {
		if bar.Count > 0 {
			c := cells[bar.From]
			if c == nil {
				c = &cell{}
				cells[bar.From] = c
			}
			c.b = float64(bar.Count)
		}
	}
	keys := make([]int64, 0, len(cells))
	for k := range cells {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	// uB counts pairs (a, b) with b > a, plus half the ties.
	var below, uB, ties float64
	for _, k := range keys {
		c := cells[k]
		uB += c.b * (below + c.a/2)
		below += c.a
		t := c.a + c.b
		ties += t*t*t - t
	}
	pairs := na * nb
	// uB/pairs is P(b > a) + P(tie)/2, so delta = 2·uB/pairs − 1.
	delta = 2*uB/pairs - 1
	n := na + nb
	variance := pairs / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return delta, 0
	}
	return delta, (uB - pairs/2) / math.Sqrt(variance)
}

// twoProportionZ tests whether k1/n1 and k2/n2 differ; positive when the
// second is larger.
func twoProportionZ(k1, n1, k2, n2 float64) float64 {
	if n1 == 0 || n2 == 0 {
		return 0
	}
	p := (k1 + k2) / (n1 + n2)
	se := math.Sqrt(p * (1 - p) * (1/n1 + 1/n2))
	if se == 0 {
		return 0
	}
	return (k2/n2 - k1/n1) / se
}

// countAbove counts the values recorded in buckets entirely above x's
// bucket, so a value equal to x within histogram precision is not "above".
func countAbove(h *hdr.Histogram, x int64) float64 {
	var n int64
	for _, bar := range h.Distribution() {
		if bar.From > x && !h.ValuesAreEquivalent(bar.From, x) {
			n += bar.Count
		}
	}
	return float64(n)
}

// latencyFindings applies the latency half of the rule to b against a.
func latencyFindings(a, b *hdr.Histogram) (worse, better, notes []string) {
	na, nb := a.TotalCount(), b.TotalCount()
	if na < minSamples || nb < minSamples {
		return nil, nil, []string{fmt.Sprintf("latency: too few successful requests to judge (%d and %d, need %d)", na, nb, minSamples)}
	}
	delta, z := mannWhitney(a, b)
	if math.Abs(z) >= zClear && math.Abs(delta) >= minDelta {
		f := fmt.Sprintf("latency distribution %s (Cliff's δ %+.2f, z %.1f)", slowerFaster(delta), delta, z)
		if delta > 0 {
			worse = append(worse, f)
		} else {
			better = append(better, f)
		}
	}
	for _, q := range []float64{tailPercentileA, tailPercentileB} {
		xa, xb := a.ValueAtPercentile(q), b.ValueAtPercentile(q)
		if xa <= 0 {
			continue
		}
		move := float64(xb-xa) / float64(xa)
		zt := twoProportionZ(countAbove(a, xa), float64(na), countAbove(b, xa), float64(nb))
		if math.Abs(zt) >= zClear && math.Abs(move) >= minTailMove && (move > 0) == (zt > 0) {
			f := fmt.Sprintf("p%g %s → %s (%+.0f%%, z %.1f)", q, Duration(xa), Duration(xb), move*100, zt)
			if move > 0 {
				worse = append(worse, f)
			} else {
				better = append(better, f)
			}
		}
	}
	return worse, better, notes
}

func slowerFaster(delta float64) string {
	if delta > 0 {
		return "slower"
	}
	return "faster"
}

// failureFindings applies the failure half of the rule.
func failureFindings(reqA, failA, reqB, failB int64) (worse, better []string) {
	if reqA == 0 || reqB == 0 {
		return nil, nil
	}
	ra, rb := failRate(reqA, failA), failRate(reqB, failB)
	move := rb - ra
	z := twoProportionZ(float64(failA), float64(reqA), float64(failB), float64(reqB))
	if math.Abs(z) < zClear || math.Abs(move) < minFailMovePP || math.Abs(move) < minFailMoveRel*math.Max(ra, rb) {
		return nil, nil
	}
	f := fmt.Sprintf("failure rate %.2f%% → %.2f%% (%+.2f pp, z %.1f)", ra*100, rb*100, move*100, z)
	if move > 0 {
		return []string{f}, nil
	}
	return nil, []string{f}
}

// judge combines the findings into a verdict.
func judge(worse, better, notes []string) Verdict {
	v := Verdict{Outcome: WithinNoise}
	switch {
	case len(worse) > 0:
		v.Outcome = Worse
	case len(better) > 0:
		v.Outcome = Better
	}
	for _, f := range worse {
		v.Findings = append(v.Findings, "worse: "+f)
	}
	for _, f := range better {
		v.Findings = append(v.Findings, "better: "+f)
	}
	v.Findings = append(v.Findings, notes...)
	if len(v.Findings) == 0 {
		v.Findings = []string{"no clear difference in latency or failures"}
	}
	return v
}
