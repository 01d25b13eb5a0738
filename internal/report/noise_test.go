package report

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

// logNormal records n latencies around median µs with the spread real
// services show; scaleTail multiplies the slowest 3% only.
func logNormal(t *testing.T, seed uint64, n int, median float64, scaleTail float64) *hdr.Histogram {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	h := result.NewHistogram()
	for range n {
		z := rng.NormFloat64()
		v := median * math.Exp(0.5*z)
		if z > 1.88 { // the top 3%
			v *= scaleTail
		}
		if err := h.RecordValue(int64(math.Max(1, v))); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestVerdictRule(t *testing.T) {
	base := logNormal(t, 1, 20000, 50000, 1)
	cases := []struct {
		name    string
		b       *hdr.Histogram
		want    Outcome
		finding string
	}{
		// Another sample of the same distribution: sampling noise only.
		{"same distribution", logNormal(t, 2, 20000, 50000, 1), WithinNoise, "no clear difference"},
		// 2% slower is real with 20000 samples but too small to matter.
		{"2% shift is noise", logNormal(t, 3, 20000, 51000, 1), WithinNoise, ""},
		{"30% slower", logNormal(t, 4, 20000, 65000, 1), Worse, "latency distribution slower"},
		{"30% faster", logNormal(t, 5, 20000, 35000, 1), Better, "latency distribution faster"},
		// The median stays put while the slowest 3% triple: only the tail
		// test sees it.
		{"tail only", logNormal(t, 6, 20000, 50000, 3), Worse, "p99"},
		// Clearly slower, but 20 requests are too few to say so.
		{"too few", logNormal(t, 7, 20, 90000, 1), WithinNoise, "too few successful requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			worse, better, notes := latencyFindings(base, c.b)
			v := judge(worse, better, notes)
			if v.Outcome != c.want {
				t.Errorf("outcome %s, want %s (findings %v)", v.Outcome, c.want, v.Findings)
			}
			if c.finding != "" && !strings.Contains(strings.Join(v.Findings, "; "), c.finding) {
				t.Errorf("findings %v lack %q", v.Findings, c.finding)
			}
		})
	}
}

func TestMannWhitneyExact(t *testing.T) {
	a, b := result.NewHistogram(), result.NewHistogram()
	for _, v := range []int64{10, 20, 30} {
		a.RecordValue(v)
	}
	for _, v := range []int64{20, 40} {
		b.RecordValue(v)
	}
	// Pairs (a, b): b > a in (10,20) (10,40) (20,40) (30,40) = 4, one tie
	// (20,20), b < a in (30,20) = 1: delta = (4 − 1) / 6.
	delta, _ := mannWhitney(a, b)
	if math.Abs(delta-0.5) > 1e-9 {
		t.Errorf("delta %v, want 0.5", delta)
	}
	if d, z := mannWhitney(a, a); d != 0 || z != 0 {
		t.Errorf("a against itself: delta %v z %v, want 0 0", d, z)
	}
}

func TestFailureRule(t *testing.T) {
	cases := []struct {
		name                  string
		reqA, failA, reqB, fB int64
		worse, better         bool
	}{
		{"none to many", 10000, 0, 10000, 500, true, false},
		{"many to none", 10000, 500, 10000, 0, false, true},
		{"same rate", 10000, 100, 20000, 200, false, false},
		// 1.00% → 1.05%: clear with a million requests, but a twentieth
		// of the rate is not a change anyone acts on.
		{"small relative move", 1000000, 10000, 1000000, 10500, false, false},
		{"few requests", 20, 0, 20, 2, false, false},
	}
	for _, c := range cases {
		w, b := failureFindings(c.reqA, c.failA, c.reqB, c.fB)
		if (len(w) > 0) != c.worse || (len(b) > 0) != c.better {
			t.Errorf("%s: worse %v better %v", c.name, w, b)
		}
	}
}
