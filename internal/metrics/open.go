package metrics

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// openInterval is what a snapshot read of the interval still open: the
// totals and the live counts come from the same reads, so the interval is
// the totals less every closed interval, exactly.
type openInterval struct {
	totals          result.Totals
	unfinished      int64 // failures that did not complete, all steps
	ok, started     int64 // live (not yet drained) successes and starts
	okHist, lagHist *hdr.Histogram
	active          int64
	inFlight        int64
	conns           int64
	trackConns      bool
}

// appendOpen adds the open interval to s, a copy of the closed series.
func appendOpen(s *result.Series, at openAt, o openInterval) {
	var closedCompleted, closedDropped int64
	for i := range s.T {
		closedCompleted += s.Completed[i]
		closedDropped += s.Dropped[i]
	}
	n := len(s.T) + 1
	var failed int64
	for c := sample.Class(1); c < sample.NumClasses; c++ {
		name := c.String()
		col := s.Failed[name]
		var closed int64
		for _, v := range col {
			closed += v
		}
		now := o.totals.ByClass[name] - closed
		failed += o.totals.ByClass[name]
		if now == 0 && col == nil {
			continue
		}
		for len(col) < n-1 {
			col = append(col, 0)
		}
		s.Failed[name] = append(col, now)
	}
	s.T = append(s.T, at.t)
	s.Target = append(s.Target, at.target)
	s.Started = append(s.Started, o.started)
	s.OK = append(s.OK, o.ok)
	// Every request that completed so far, less the closed intervals'.
	s.Completed = append(s.Completed, o.totals.Successful+failed-o.unfinished-closedCompleted)
	s.Dropped = append(s.Dropped, o.totals.ByClass[sample.Dropped.String()]-closedDropped)
	ps := []int64{0, 0, 0}
	if o.ok > 0 {
		ps = o.okHist.ValueAtPercentilesSlice([]float64{50, 95, 99})
	}
	s.P50US = append(s.P50US, ps[0])
	s.P95US = append(s.P95US, ps[1])
	s.P99US = append(s.P99US, ps[2])
	lag99 := int64(0)
	if o.started > 0 {
		lag99 = o.lagHist.ValueAtPercentile(99)
	}
	s.LagP99US = append(s.LagP99US, lag99)
	s.Active = append(s.Active, o.active)
	s.InFlight = append(s.InFlight, o.inFlight)
	if o.trackConns {
		s.Connections = append(s.Connections, o.conns)
	}
}
