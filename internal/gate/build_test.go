package gate

import (
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// stepSpec is one step: its successful latencies (µs, one request each)
// and its failures by class, each failure taking failUS.
type stepSpec struct {
	scenario, name string
	okUS           []int64
	fails          map[sample.Class]int64
	failUS         int64
}

// build makes a result whose counts and histograms agree, as the engine's
// do; totals are the sum of the steps.
func build(t *testing.T, run result.RunInfo, specs ...stepSpec) *result.Result {
	t.Helper()
	r := &result.Result{Schema: result.Schema, Run: run}
	r.Totals.ByClass = map[string]int64{}
	totOK, totAll := result.NewHistogram(), result.NewHistogram()
	rec := func(v int64, hs ...interface{ RecordValue(int64) error }) {
		for _, h := range hs {
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, sp := range specs {
		okH, allH := result.NewHistogram(), result.NewHistogram()
		s := result.Step{Scenario: sp.scenario, Name: sp.name, ByClass: map[string]int64{}}
		for _, v := range sp.okUS {
			rec(v, okH, allH, totOK, totAll)
		}
		s.Successful = int64(len(sp.okUS))
		for c, n := range sp.fails {
			s.ByClass[c.String()] += n
			s.Failed += n
			for i := int64(0); i < n; i++ {
				rec(max(sp.failUS, 1), allH, totAll)
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
	r.Totals.Iterations = r.Totals.Requests / 2
	if err := r.Check(); err != nil {
		t.Fatalf("constructed result is inconsistent: %v", err)
	}
	return r
}

// spread returns n latencies evenly from lo to hi µs.
func spread(n int, lo, hi int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		if n == 1 {
			out[i] = lo
			continue
		}
		out[i] = lo + (hi-lo)*int64(i)/int64(n-1)
	}
	return out
}

func lag(t *testing.T, us ...int64) result.Latency {
	t.Helper()
	h := result.NewHistogram()
	for _, v := range us {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return result.LatencyOf(h)
}
