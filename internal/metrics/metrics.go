// Package metrics collects request outcomes on the hot path and turns them
// into step totals and per-interval series. Recording goes to one of a few
// shards chosen by the caller (a user keeps its shard), so concurrent users
// rarely meet on a lock; shards are merged only at interval edges and at
// the end, where histograms add exactly.
package metrics

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// StepInfo names a request step for the result.
type StepInfo struct {
	Scenario string
	Name     string
	Group    string
}

// Recorder is the run's collector. Create it with New.
type Recorder struct {
	steps  []StepInfo
	shards []*Shard

	// Gauges the engine keeps current; sampled at each interval edge.
	Active   atomic.Int64
	InFlight atomic.Int64
	// Connections is the number of open persistent connections; it goes
	// into the series only when TrackConnections is set before the run.
	Connections      atomic.Int64
	TrackConnections bool

	mu     sync.Mutex // guards the series below
	series result.Series
	lag    *hdr.Histogram
}

// Shard is a share of the recorder that one user (or worker) records into.
type Shard struct {
	mu    sync.Mutex
	steps []stepStats
	win   *window
	spare *window
	lag   *hdr.Histogram
	errs  map[errKey]*errSample
	iters int64
}

type stepStats struct {
	byClass [sample.NumClasses]int64
	ok, all *hdr.Histogram
}

type window struct {
	started, completed, ok, dropped int64
	failed                          [sample.NumClasses]int64
	okHist, lag                     *hdr.Histogram
}

func newWindow() *window {
	return &window{okHist: result.NewHistogram(), lag: result.NewHistogram()}
}

func (w *window) reset() {
	w.started, w.completed, w.ok, w.dropped = 0, 0, 0, 0
	w.failed = [sample.NumClasses]int64{}
	w.okHist.Reset()
	w.lag.Reset()
}

type errKey struct {
	step  int
	class sample.Class
}

type errSample struct {
	msg   string
	count int64
}

// maxErrorKinds bounds the error samples a shard keeps, so a run full of
// distinct error texts cannot grow memory without end.
const maxErrorKinds = 64

// New makes a recorder for the given steps, with one shard per CPU.
func New(steps []StepInfo, intervalS float64) *Recorder {
	r := &Recorder{steps: steps, lag: result.NewHistogram()}
	n := runtime.GOMAXPROCS(0)
	for i := 0; i < n; i++ {
		sh := &Shard{win: newWindow(), spare: newWindow(), lag: result.NewHistogram(), errs: map[errKey]*errSample{}}
		sh.steps = make([]stepStats, len(steps))
		for j := range sh.steps {
			sh.steps[j] = stepStats{ok: result.NewHistogram(), all: result.NewHistogram()}
		}
		r.shards = append(r.shards, sh)
	}
	r.series = result.Series{IntervalS: intervalS, Failed: map[string][]int64{}}
	return r
}

// Shard returns the shard a user with this id records into.
func (r *Recorder) Shard(id int64) *Shard {
	return r.shards[uint64(id)%uint64(len(r.shards))]
}

func toUS(d time.Duration) int64 {
	us := d.Microseconds()
	if us < result.HistLowUS {
		return result.HistLowUS
	}
	if us > result.HistHighUS {
		return result.HistHighUS
	}
	return us
}

// Record counts one finished request of step with its class and latency.
func (s *Shard) Record(step int, class sample.Class, latency time.Duration) {
	us := toUS(latency)
	s.mu.Lock()
	st := &s.steps[step]
	st.byClass[class]++
	st.all.RecordValue(us)
	s.win.completed++
	if class == sample.OK {
		st.ok.RecordValue(us)
		s.win.ok++
		s.win.okHist.RecordValue(us)
	} else {
		s.win.failed[class]++
	}
	s.mu.Unlock()
}

// RecordUnfinished counts a request that never produced a latency: an
// arrival dropped for want of a free slot, or one cut off at the end.
func (s *Shard) RecordUnfinished(step int, class sample.Class) {
	s.mu.Lock()
	s.steps[step].byClass[class]++
	s.win.failed[class]++
	if class == sample.Dropped {
		s.win.dropped++
	}
	s.mu.Unlock()
}

// Started counts an iteration start and how late it was against its
// intended time.
func (s *Shard) Started(lag time.Duration) {
	us := toUS(lag)
	s.mu.Lock()
	s.win.started++
	s.iters++
	s.win.lag.RecordValue(us)
	s.lag.RecordValue(us)
	s.mu.Unlock()
}

// Error keeps a sample of a failure's text for the result file.
func (s *Shard) Error(step int, class sample.Class, msg string) {
	k := errKey{step, class}
	s.mu.Lock()
	if e, ok := s.errs[k]; ok {
		e.count++
	} else if len(s.errs) < maxErrorKinds {
		s.errs[k] = &errSample{msg: msg, count: 1}
	}
	s.mu.Unlock()
}

// Tick closes the current interval: it swaps every shard's window out under
// its lock (a pointer swap), then merges outside the locks. target is the
// profile's intended users or rate at the interval's start.
func (r *Recorder) Tick(t float64, target float64) {
	merged := newWindow()
	for _, sh := range r.shards {
		sh.mu.Lock()
		w := sh.win
		sh.win = sh.spare
		sh.spare = w
		sh.mu.Unlock()
		merged.started += w.started
		merged.completed += w.completed
		merged.ok += w.ok
		merged.dropped += w.dropped
		for c := range w.failed {
			merged.failed[c] += w.failed[c]
		}
		merged.okHist.Merge(w.okHist)
		merged.lag.Merge(w.lag)
		// The spare is only touched again at the next Tick, after this
		// reset, so no recorder can see a half-reset window.
		sh.mu.Lock()
		w.reset()
		sh.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.series
	s.T = append(s.T, t)
	s.Started = append(s.Started, merged.started)
	s.Completed = append(s.Completed, merged.completed)
	s.OK = append(s.OK, merged.ok)
	n := len(s.T)
	for c := sample.Class(1); c < sample.NumClasses; c++ {
		name := c.String()
		col := s.Failed[name]
		if merged.failed[c] == 0 && col == nil {
			continue
		}
		for len(col) < n-1 {
			col = append(col, 0)
		}
		s.Failed[name] = append(col, merged.failed[c])
	}
	ps := merged.okHist.ValueAtPercentilesSlice([]float64{50, 95, 99})
	if merged.okHist.TotalCount() == 0 {
		ps = []int64{0, 0, 0}
	}
	s.P50US = append(s.P50US, ps[0])
	s.P95US = append(s.P95US, ps[1])
	s.P99US = append(s.P99US, ps[2])
	s.Active = append(s.Active, r.Active.Load())
	s.InFlight = append(s.InFlight, r.InFlight.Load())
	s.Dropped = append(s.Dropped, merged.dropped)
	lag99 := int64(0)
	if merged.lag.TotalCount() > 0 {
		lag99 = merged.lag.ValueAtPercentile(99)
	}
	s.LagP99US = append(s.LagP99US, lag99)
	s.Target = append(s.Target, target)
	if r.TrackConnections {
		s.Connections = append(s.Connections, r.Connections.Load())
	}
}

// Snapshot is the recorder's state merged across shards.
type Snapshot struct {
	Steps      []result.Step
	Totals     result.Totals
	Series     result.Series
	Lag        result.Latency
	Errors     []result.ErrorSample
	Iterations int64
}

// Snapshot merges the shards into result values. It is safe to call while
// recording goes on (for periodic flushes); each shard is locked in turn.
func (r *Recorder) Snapshot() Snapshot {
	type acc struct {
		byClass [sample.NumClasses]int64
		ok, all *hdr.Histogram
	}
	accs := make([]acc, len(r.steps))
	for i := range accs {
		accs[i] = acc{ok: result.NewHistogram(), all: result.NewHistogram()}
	}
	lag := result.NewHistogram()
	errs := map[errKey]*errSample{}
	var iters int64
	for _, sh := range r.shards {
		sh.mu.Lock()
		for i := range sh.steps {
			for c, n := range sh.steps[i].byClass {
				accs[i].byClass[c] += n
			}
			accs[i].ok.Merge(sh.steps[i].ok)
			accs[i].all.Merge(sh.steps[i].all)
		}
		lag.Merge(sh.lag)
		for k, e := range sh.errs {
			if have, ok := errs[k]; ok {
				have.count += e.count
			} else {
				errs[k] = &errSample{msg: e.msg, count: e.count}
			}
		}
		iters += sh.iters
		sh.mu.Unlock()
	}

	snap := Snapshot{Iterations: iters, Lag: result.LatencyOf(lag)}
	totOK, totAll := result.NewHistogram(), result.NewHistogram()
	snap.Totals.ByClass = map[string]int64{}
	for i, a := range accs {
		st := result.Step{Scenario: r.steps[i].Scenario, Name: r.steps[i].Name, Group: r.steps[i].Group, ByClass: map[string]int64{}}
		for c, n := range a.byClass {
			cls := sample.Class(c)
			st.Requests += n
			if cls == sample.OK {
				st.Successful += n
				continue
			}
			st.Failed += n
			if n > 0 {
				st.ByClass[cls.String()] += n
				snap.Totals.ByClass[cls.String()] += n
			}
		}
		st.LatencyOK = result.LatencyOf(a.ok)
		st.LatencyAll = result.LatencyOf(a.all)
		totOK.Merge(a.ok)
		totAll.Merge(a.all)
		snap.Totals.Requests += st.Requests
		snap.Totals.Successful += st.Successful
		snap.Totals.Failed += st.Failed
		snap.Steps = append(snap.Steps, st)
	}
	snap.Totals.LatencyOK = result.LatencyOf(totOK)
	snap.Totals.LatencyAll = result.LatencyOf(totAll)
	snap.Totals.Iterations = iters
	for k, e := range errs {
		snap.Errors = append(snap.Errors, result.ErrorSample{Step: r.steps[k.step].Name, Class: k.class.String(), Message: e.msg, Count: e.count})
	}
	sortErrors(snap.Errors)

	r.mu.Lock()
	snap.Series = copySeries(r.series)
	r.mu.Unlock()
	return snap
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
