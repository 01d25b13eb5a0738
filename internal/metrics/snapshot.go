package metrics

import (
	"strconv"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// Snapshot is the recorder's state merged across shards.
type Snapshot struct {
	Steps      []result.Step
	Totals     result.Totals
	Series     result.Series
	Lag        result.Latency
	Errors     []result.ErrorSample
	ErrorsTop  int
	Iterations int64
}

// countsOf returns *c, making it at its first use.
func countsOf(c *[]int64) []int64 {
	if *c == nil {
		*c = make([]int64, result.CountsLen)
	}
	return *c
}

// addCounts adds h's counts into dst, a counts array of
// result.NewHistogram's geometry, and returns how many it added.
func (h *sparseHist) addCounts(dst []int64) (n int64) {
	if h == nil {
		return 0
	}
	for ci, c := range h.chunks {
		if c == nil {
			continue
		}
		d := dst[ci<<chunkShift:][:chunkLen]
		for j, k := range c {
			d[j] += int64(k)
			n += int64(k)
		}
	}
	for i, k := range h.over {
		dst[i] += k
		n += k
	}
	return n
}

var (
	emptyOnce sync.Once
	empty     result.Latency
)

// emptyLatency is result.LatencyOf of an empty histogram: it encodes the
// same every time, so it is made once.
func emptyLatency() result.Latency {
	emptyOnce.Do(func() { empty = result.LatencyOf(result.NewHistogram()) })
	return empty
}

// Snapshot merges the shards into result values. It is safe to call while
// recording goes on (for periodic flushes): it takes turns with Tick, and
// reads a step's failures from each shard under that shard's lock. A
// step's successes are counted from its latencies, so the two agree.
func (r *Recorder) Snapshot() Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot(nil)
}

// SnapshotOpen is Snapshot with the interval still open appended to the
// series, from the same reads the totals are made of: the series then add
// up to the totals exactly, as a checkpoint must, where Snapshot's series
// stop at the last closed interval while its totals go on to now. The
// interval is partial (it covers less than interval_s); target gives the
// profile's target at its start (seconds on the run clock), as Tick is
// given it.
func (r *Recorder) SnapshotOpen(target func(atS float64) float64) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := float64(len(r.series.T)) * r.series.IntervalS
	return r.snapshot(&openAt{t: at, target: target(at)})
}

// openAt places the interval still open: its start on the run clock and
// the profile's target then.
type openAt struct{ t, target float64 }

// snapshot merges the shards. A step's latencies are summed across shards
// into counts arrays, encoded, and cleared for the next step: the shards
// keep only the buckets they reached, and a snapshot makes no histogram
// per step.
func (r *Recorder) snapshot(open *openAt) Snapshot {
	m := merger{r: r, okC: make([]int64, result.CountsLen), totOK: make([]int64, result.CountsLen)}
	if open != nil {
		// Tick's scratch: Tick cannot run while r.mu is held.
		m.openOK, m.openLag = r.tickOK, r.tickLag
		m.openOK.Reset()
		m.openLag.Reset()
	}
	m.snap.Totals.ByClass = map[string]int64{}
	for i := range r.steps {
		st := m.step(i)
		if r.steps[i].Hops && st.Requests == 0 {
			continue
		}
		m.snap.Totals.Requests += st.Requests
		m.snap.Totals.Successful += st.Successful
		m.snap.Totals.Failed += st.Failed
		m.snap.Steps = append(m.snap.Steps, st)
	}
	m.totals()
	snap := m.snap
	snap.Series = copySeries(r.series)
	if open != nil {
		appendOpen(&snap.Series, *open, openInterval{
			totals: snap.Totals, unfinished: m.unfinished, ok: m.liveOK, started: m.liveStarted,
			okHist: m.openOK, lagHist: m.openLag,
			active: r.Active.Load(), inFlight: r.InFlight.Load(), conns: r.Connections.Load(), trackConns: r.TrackConnections,
		})
	}
	return snap
}

// merger holds one snapshot's scratch: the counts arrays a step's
// latencies are summed into (those for failures made at the first step
// that has some), the run's totals so far, and what the open interval
// needs.
type merger struct {
	r                               *Recorder
	openOK, openLag                 *hdr.Histogram
	okC, totOK                      []int64
	failC, allC, totFail            []int64
	liveOK, liveStarted, unfinished int64
	snap                            Snapshot
}

// stepSums is one step's outcomes summed across the shards.
type stepSums struct {
	byClass    [sample.NumClasses]int64
	tables     []*msgTable
	statuses   map[string]int64
	okN, failN int64
}

// step merges step i across the shards, folds its latencies into the
// totals' counts, and leaves m's step scratch cleared.
func (m *merger) step(i int) result.Step {
	sums := m.sumShards(i)
	info := m.r.steps[i]
	st := result.Step{Scenario: info.Scenario, Name: info.Name, Group: info.Group, ByClass: map[string]int64{}}
	for c, n := range sums.byClass {
		cls := sample.Class(c)
		st.Requests += n
		if cls == sample.OK {
			st.Successful += n
			continue
		}
		st.Failed += n
		if n > 0 {
			st.ByClass[cls.String()] += n
			m.snap.Totals.ByClass[cls.String()] += n
		}
	}
	st.Statuses = sums.statuses
	st.Errors, st.OtherErrors = combine(m.r.top, sums.tables)
	st.LatencyOK, st.LatencyAll = m.stepLatencies(sums.okN, sums.failN)
	m.foldIntoTotals(sums.okN, sums.failN)
	return st
}

// sumShards adds step i's live and closed counts from every shard; each
// shard's failures are read under its lock. Successes are counted from
// their latencies, so the two agree.
func (m *merger) sumShards(i int) stepSums {
	var sums stepSums
	addStatus := func(code int, n int64) {
		if sums.statuses == nil {
			sums.statuses = map[string]int64{}
		}
		sums.statuses[strconv.Itoa(code)] += n
	}
	sums.okN = m.r.okCum[i].addCounts(m.okC)
	for _, sh := range m.r.shards {
		ss := &sh.steps[i]
		n := ss.ok.Load().addCounts(m.okC, m.openOK)
		sums.okN += n
		m.liveOK += n
		sh.mu.Lock()
		for c, n := range ss.byClass {
			sums.byClass[c] += n
		}
		m.unfinished += ss.unfinished
		if ss.fail != nil {
			sums.failN += ss.fail.addCounts(countsOf(&m.failC))
		}
		ss.statuses.each(addStatus)
		if t := sh.msgs[i]; t != nil {
			sums.tables = append(sums.tables, t.clone())
		}
		sh.mu.Unlock()
	}
	sums.byClass[sample.OK] += sums.okN
	return sums
}

// stepLatencies encodes the step's latencies from the summed counts.
func (m *merger) stepLatencies(okN, failN int64) (ok, all result.Latency) {
	ok = emptyLatency()
	if okN > 0 {
		ok = result.LatencyOfCounts(m.okC)
	}
	switch {
	case failN == 0:
		return ok, ok
	case okN == 0:
		return ok, result.LatencyOfCounts(m.failC)
	}
	both := countsOf(&m.allC)
	for j := range both {
		both[j] = m.okC[j] + m.failC[j]
	}
	return ok, result.LatencyOfCounts(both)
}

// foldIntoTotals adds the step's counts to the run's and clears them for
// the next step.
func (m *merger) foldIntoTotals(okN, failN int64) {
	if okN > 0 {
		for j, c := range m.okC {
			m.totOK[j] += c
		}
		clear(m.okC)
	}
	if failN > 0 {
		tf := countsOf(&m.totFail)
		for j, c := range m.failC {
			tf[j] += c
		}
		clear(m.failC)
	}
}

// totals encodes the run's latencies and the generator's lag once every
// step is merged.
func (m *merger) totals() {
	r, snap := m.r, &m.snap
	lagC := m.okC // cleared by the last step, and no longer needed for steps
	iters := r.lagCum.addCounts(lagC)
	for _, sh := range r.shards {
		n := sh.lag.addCounts(lagC, m.openLag)
		iters += n
		m.liveStarted += n
	}
	snap.Iterations = iters
	snap.Lag = result.LatencyOfCounts(lagC)
	snap.Totals.LatencyOK = result.LatencyOfCounts(m.totOK)
	snap.Totals.LatencyAll = snap.Totals.LatencyOK
	if m.totFail != nil {
		for j, c := range m.totFail {
			m.totOK[j] += c
		}
		snap.Totals.LatencyAll = result.LatencyOfCounts(m.totOK)
	}
	snap.Totals.Iterations = iters
	snap.ErrorsTop = r.top
	snap.Errors = result.FlatSamples(snap.Steps)
}

func copySeries(s result.Series) result.Series {
	c := s
	c.T = append([]float64(nil), s.T...)
	c.Started = append([]int64(nil), s.Started...)
	c.Completed = append([]int64(nil), s.Completed...)
	c.OK = append([]int64(nil), s.OK...)
	c.P50US = append([]int64(nil), s.P50US...)
	c.P95US = append([]int64(nil), s.P95US...)
	c.P99US = append([]int64(nil), s.P99US...)
	c.Active = append([]int64(nil), s.Active...)
	c.InFlight = append([]int64(nil), s.InFlight...)
	c.Dropped = append([]int64(nil), s.Dropped...)
	c.LagP99US = append([]int64(nil), s.LagP99US...)
	c.Target = append([]float64(nil), s.Target...)
	c.Connections = append([]int64(nil), s.Connections...)
	c.Failed = map[string][]int64{}
	n := len(s.T)
	for k, v := range s.Failed {
		col := append([]int64(nil), v...)
		for len(col) < n {
			col = append(col, 0)
		}
		c.Failed[k] = col
	}
	return c
}

// Series returns a copy of the series so far.
func (r *Recorder) Series() result.Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	return copySeries(r.series)
}
