package report

import (
	"math"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// dist spreads n latencies over [lo, hi] µs by quantile: q^shape, so
// shape > 1 gives the long right tail real latencies have. It is a formula
// rather than a random source so golden files never depend on a PRNG.
type dist struct {
	lo, hi int64
	shape  float64
}

func (d dist) record(t *testing.T, hs []*hdr.Histogram, n int64) {
	t.Helper()
	shape := d.shape
	if shape == 0 {
		shape = 1
	}
	for i := int64(0); i < n; i++ {
		q := (float64(i) + 0.5) / float64(n)
		v := d.lo + int64(math.Round(float64(d.hi-d.lo)*math.Pow(q, shape)))
		for _, h := range hs {
			if err := h.RecordValue(v); err != nil {
				t.Fatalf("record %d: %v", v, err)
			}
		}
	}
}

// failure is one failure class of a step and how long those requests took.
type failure struct {
	class sample.Class
	n     int64
	lat   dist
}

type stepSpec struct {
	scenario, name, group string
	ok                    int64
	okLat                 dist
	fails                 []failure
}

// build makes a result whose counts and histograms agree the way the
// engine's do, so the tests exercise real decoding and recomputation.
func build(t *testing.T, r result.Result, specs ...stepSpec) *result.Result {
	t.Helper()
	r.Schema = result.Schema
	totOK, totAll := result.NewHistogram(), result.NewHistogram()
	r.Totals.ByClass = map[string]int64{}
	for _, sp := range specs {
		okH, allH := result.NewHistogram(), result.NewHistogram()
		s := result.Step{Scenario: sp.scenario, Name: sp.name, Group: sp.group, ByClass: map[string]int64{}}
		sp.okLat.record(t, []*hdr.Histogram{okH, allH, totOK, totAll}, sp.ok)
		s.Successful = sp.ok
		for _, f := range sp.fails {
			s.ByClass[f.class.String()] += f.n
			s.Failed += f.n
			// A dropped arrival never ran, and one cut off at the end never
			// finished: neither has a latency to record.
			if f.class != sample.Dropped && f.class != sample.Interrupted {
				f.lat.record(t, []*hdr.Histogram{allH, totAll}, f.n)
			}
		}
		s.Requests = s.Successful + s.Failed
		s.LatencyOK, s.LatencyAll = result.LatencyOf(okH), result.LatencyOf(allH)
		r.Steps = append(r.Steps, s)
		r.Totals.Requests += s.Requests
		r.Totals.Successful += s.Successful
		r.Totals.Failed += s.Failed
		for c, n := range s.ByClass {
			r.Totals.ByClass[c] += n
		}
	}
	r.Totals.LatencyOK, r.Totals.LatencyAll = result.LatencyOf(totOK), result.LatencyOf(totAll)
	if err := r.Check(); err != nil {
		t.Fatalf("constructed result is inconsistent: %v", err)
	}
	return &r
}

func lagOf(t *testing.T, d dist, n int64) result.Latency {
	t.Helper()
	h := result.NewHistogram()
	d.record(t, []*hdr.Histogram{h}, n)
	return result.LatencyOf(h)
}
