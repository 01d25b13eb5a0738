package merge

import (
	"math"
	"sort"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// series lays every input's intervals on one wall-clock axis starting at
// start. An input's interval lands in the merged interval nearest to it;
// distributed segments start together, so the shift is at most half an
// interval.
func (o Options) series(rs []*result.Result, start time.Time) result.Series {
	interval := 0.0
	for _, r := range rs {
		if len(r.Series.T) > 0 {
			interval = r.Series.IntervalS
			break
		}
	}
	if interval <= 0 {
		return result.Series{IntervalS: rs[0].Series.IntervalS, Failed: map[string][]int64{}}
	}
	slots, n := seriesSlots(rs, start, interval)
	out := emptySeries(rs, interval, n)
	p := newPercentileSums(n)
	for _, s := range slots {
		addInterval(&out, rs[s.r].Series, s, p)
	}
	p.fill(&out)
	return out
}

// seriesSlot is input r's interval i, landing at interval at of the merge.
type seriesSlot struct{ r, i, at int }

// seriesSlots places every input's intervals on the merged axis; n is
// the number of merged intervals.
func seriesSlots(rs []*result.Result, start time.Time, interval float64) (slots []seriesSlot, n int) {
	for ri, r := range rs {
		off := r.Run.Started.Sub(start).Seconds()
		for i, t := range r.Series.T {
			at := max(int(math.Round((t+off)/interval)), 0)
			slots = append(slots, seriesSlot{ri, i, at})
			n = max(n, at+1)
		}
	}
	return slots, n
}

// emptySeries is the merged series of n intervals, every column zero; a
// connections column and failure classes only where some input has them.
func emptySeries(rs []*result.Result, interval float64, n int) result.Series {
	out := result.Series{IntervalS: interval, Failed: map[string][]int64{}}
	out.T = make([]float64, n)
	for i := range out.T {
		out.T[i] = float64(i) * interval
	}
	zeros := func() []int64 { return make([]int64, n) }
	out.Started, out.Completed, out.OK = zeros(), zeros(), zeros()
	out.P50US, out.P95US, out.P99US = zeros(), zeros(), zeros()
	out.Active, out.InFlight, out.Dropped, out.LagP99US = zeros(), zeros(), zeros(), zeros()
	out.Target = make([]float64, n)
	for _, r := range rs {
		if len(r.Series.Connections) > 0 {
			out.Connections = zeros()
			break
		}
	}
	for _, r := range rs {
		for c := range r.Series.Failed {
			if out.Failed[c] == nil {
				out.Failed[c] = zeros()
			}
		}
	}
	return out
}

// percentileSums are, by merged interval, the weighted sums for the
// percentile estimates.
type percentileSums struct {
	w []float64
	p [3][]float64
}

func newPercentileSums(n int) *percentileSums {
	return &percentileSums{w: make([]float64, n), p: [3][]float64{make([]float64, n), make([]float64, n), make([]float64, n)}}
}

// addInterval adds input interval s.i of in to the merged interval s.at.
func addInterval(out *result.Series, in result.Series, s seriesSlot, p *percentileSums) {
	at := s.at
	get := func(col []int64) int64 {
		if s.i < len(col) {
			return col[s.i]
		}
		return 0
	}
	out.Started[at] += get(in.Started)
	out.Completed[at] += get(in.Completed)
	out.OK[at] += get(in.OK)
	out.Active[at] += get(in.Active)
	out.InFlight[at] += get(in.InFlight)
	out.Dropped[at] += get(in.Dropped)
	if out.Connections != nil {
		out.Connections[at] += get(in.Connections)
	}
	out.LagP99US[at] = max(out.LagP99US[at], get(in.LagP99US))
	if s.i < len(in.Target) {
		out.Target[at] += in.Target[s.i]
	}
	for c, col := range in.Failed {
		out.Failed[c][at] += get(col)
	}
	// The series percentiles are over successful requests, so the
	// interval's ok count is their weight; 0 means "no data".
	if w := float64(get(in.OK)); w > 0 && get(in.P50US) > 0 {
		p.w[at] += w
		for k, col := range [][]int64{in.P50US, in.P95US, in.P99US} {
			p.p[k][at] += w * float64(get(col))
		}
	}
}

// fill sets the merged percentiles: the ok-weighted means.
func (p *percentileSums) fill(out *result.Series) {
	for at, w := range p.w {
		if w == 0 {
			continue
		}
		out.P50US[at] = int64(math.Round(p.p[0][at] / w))
		out.P95US[at] = int64(math.Round(p.p[1][at] / w))
		out.P99US[at] = int64(math.Round(p.p[2][at] / w))
	}
}

// samples adds up error samples with the same step, class and message.
func samples(rs []*result.Result) []result.ErrorSample {
	type key struct{ step, class, msg string }
	idx := map[key]int{}
	var out []result.ErrorSample
	for _, r := range rs {
		for _, s := range r.Samples {
			k := key{s.Step, s.Class, s.Message}
			if i, ok := idx[k]; ok {
				out[i].Count += s.Count
				continue
			}
			idx[k] = len(out)
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}
