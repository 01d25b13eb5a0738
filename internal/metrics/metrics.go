// Package metrics collects request outcomes on the hot path and turns them
// into step totals and per-interval series. Recording goes to one of a few
// shards chosen by the caller (a user keeps its shard). A success and an
// iteration start take no lock: each is one atomic add to a bucket of a
// sparse histogram (live.go), which Tick drains into the step's totals and
// the interval's series; a failure, rarer and carrying a message, takes
// its shard's lock. Shards are merged at interval edges and at the end,
// where histograms add exactly.
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
	// Hops marks the row of a step's redirect hops: it is left out of a
	// snapshot while no hop was made, so a run that meets no redirect
	// shows only its steps.
	Hops bool
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

	// mu guards the series and the cumulative counts below, and makes
	// drains (Tick) and snapshots take turns; recording never takes it.
	mu     sync.Mutex
	series result.Series
	// okCum is each step's successes drained from the shards; lagCum the
	// iteration starts' lag. tickOK and tickLag are Tick's scratch.
	okCum           []*sparseHist
	lagCum          sparseHist
	tickOK, tickLag *hdr.Histogram

	// top is how many distinct failure messages a step reports; each
	// shard's table of a step holds tableCap(top). redact cleans a new
	// message's text before it is kept; failures, when set, takes samples
	// of failing exchanges (failures.go). Set before the run, by Configure.
	top      int
	tableCap int
	redact   func(string) string
	failures *FailureLog
}

// Shard is a share of the recorder that one user (or worker) records into.
type Shard struct {
	// lag counts iteration starts by lateness, lock-free; the number of
	// iterations is its count.
	lag liveHist

	mu    sync.Mutex
	steps []stepStats
	win   window // the interval's failures, under mu
	// msgs holds each step's failure messages, made at its first failure.
	msgs []*msgTable
	key  []byte // scratch for message keys, under mu
	rec  *Recorder
}

type stepStats struct {
	// ok counts the latencies of successes since the last Tick, written
	// without a lock; their number is the step's successes. Made at the
	// first success.
	ok       atomic.Pointer[liveHist]
	statuses statusTable

	// Under the shard's lock: failures by class and their latencies. The
	// step's "all" latency is ok's and fail's sum, made at snapshot.
	byClass [sample.NumClasses]int64
	fail    *sparseHist
	// unfinished counts the failures that did not complete (dropped or
	// cut off), which an interval's completed count leaves out.
	unfinished int64
}

// window is a shard's failures in the current interval; its successes and
// iteration starts are drained from the live histograms.
type window struct {
	// completed: failures that ended (all but dropped and interrupted
	// ones), with a latency or, sent nothing, without.
	completed, dropped int64
	failed             [sample.NumClasses]int64
}

// New makes a recorder for the given steps, with one shard per CPU.
func New(steps []StepInfo, intervalS float64) *Recorder {
	r := &Recorder{steps: steps, top: result.DefaultErrorsTop, redact: RedactURLCredentials,
		okCum: make([]*sparseHist, len(steps)), tickOK: result.NewHistogram(), tickLag: result.NewHistogram()}
	n := runtime.GOMAXPROCS(0)
	for i := 0; i < n; i++ {
		sh := &Shard{msgs: make([]*msgTable, len(steps)), rec: r}
		// A step's histograms are made at its first value and hold only
		// the buckets its latencies reach: dense ones, at 184 KB each, two
		// per step and shard, made a plan of hundreds of steps hold
		// gigabytes.
		sh.steps = make([]stepStats, len(steps))
		r.shards = append(r.shards, sh)
	}
	r.series = result.Series{IntervalS: intervalS, Failed: map[string][]int64{}}
	r.tableCap = tableCap(r.top, len(r.shards))
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

// ErrorOptions tune how failures are described.
type ErrorOptions struct {
	// Top is how many distinct failure messages each step reports
	// (0: result.DefaultErrorsTop).
	Top int
	// Redact, when set, cleans a message's text (after URL credentials
	// are hidden) before it is kept: the place for the plan's secrets.
	Redact func(string) string
	// Failures, when set, receives samples of failing exchanges.
	Failures *FailureLog
	// Phase is what the recorder's steps are: "" or PhaseLoad the run's
	// load, PhaseSetup or PhaseTeardown the workflow's; failure samples
	// say it, since their step_index is into that phase's steps.
	Phase string
}

// Configure sets the error options; call it before recording starts.
func (r *Recorder) Configure(o ErrorOptions) {
	if o.Top > 0 {
		r.top = o.Top
		r.tableCap = tableCap(r.top, len(r.shards))
	}
	if o.Redact != nil {
		r.redact = func(s string) string { return o.Redact(RedactURLCredentials(s)) }
	}
	r.failures = nil
	if o.Failures != nil {
		r.failures = o.Failures.forRecorder(o.Phase, len(r.steps), r.redact)
	}
}

// Top is how many distinct failure messages each step reports.
func (r *Recorder) Top() int { return r.top }

// Failures is the log of failing exchanges, or nil when none is kept.
func (s *Shard) Failures() *FailureLog { return s.rec.failures }

// Record counts one finished request of step with its class and latency.
// A failure recorded here has no message of its own; Fail gives one.
func (s *Shard) Record(step int, class sample.Class, latency time.Duration) {
	s.record(step, class, 0, latency, nil, "")
}

// RecordResponse counts one answered request: its class, its HTTP status
// and latency. A success allocates nothing.
func (s *Shard) RecordResponse(step int, class sample.Class, status int, latency time.Duration) {
	s.record(step, class, status, latency, nil, "")
}

// Fail counts one failed request with what it said: msg is the server's
// answer, the error text or the check's explanation (status 0: no answer).
// A message seen before costs no allocation.
func (s *Shard) Fail(step int, class sample.Class, status int, latency time.Duration, msg []byte) {
	s.record(step, class, status, latency, msg, "")
}

// FailText is Fail with a message held in a string.
func (s *Shard) FailText(step int, class sample.Class, status int, latency time.Duration, msg string) {
	s.record(step, class, status, latency, nil, msg)
}

func (s *Shard) record(step int, class sample.Class, status int, latency time.Duration, msg []byte, msgS string) {
	us := toUS(latency)
	st := &s.steps[step]
	if class == sample.OK {
		if status > 0 && !st.statuses.count(status) {
			s.mu.Lock()
			st.statuses.countMore(status)
			s.mu.Unlock()
		}
		h := st.ok.Load()
		if h == nil {
			h = liveOf(&st.ok)
		}
		h.record(us)
		return
	}
	s.mu.Lock()
	if status > 0 && !st.statuses.count(status) {
		st.statuses.countMore(status)
	}
	s.message(step, class, status, msg, msgS, 1)
	st.byClass[class]++
	s.win.completed++
	sparseOf(&st.fail).record(us)
	s.win.failed[class]++
	s.mu.Unlock()
}

// message counts n failures of class with this message (none: the class's
// default text) in the step's table. Called under s.mu.
func (s *Shard) message(step int, class sample.Class, status int, msg []byte, msgS string, n int64) {
	t := s.msgs[step]
	if t == nil {
		t = &msgTable{m: map[string]*msgEntry{}}
		s.msgs[step] = t
	}
	s.key = appendKey(s.key[:0], class, status, nil)
	switch {
	case len(msg) > 0:
		s.key = appendText(s.key, msg, MaxMessage, false)
	case msgS != "":
		s.key = appendTextString(s.key, msgS, MaxMessage)
	}
	if len(s.key) == 3 {
		s.key = append(s.key, defaultMessage(class)...)
	}
	t.count(s.key, class, status, s.key[3:], n, s.rec.tableCap, s.rec.redact)
}

// FailUnsent counts a failure of step before anything was sent: a
// control step or script that failed ahead of it, or a request that could
// not be built. It is one outcome of the step, in its class and messages,
// and it completed (it was not dropped or cut off), but it has no
// latency: a 0 µs sample would pull the step's and the run's percentiles
// down. What was sent is what has a latency.
func (s *Shard) FailUnsent(step int, class sample.Class, msg string) {
	s.mu.Lock()
	s.message(step, class, 0, nil, msg, 1)
	s.steps[step].byClass[class]++
	s.win.completed++
	s.win.failed[class]++
	s.mu.Unlock()
}

// RecordUnfinished counts a request that never produced a latency: an
// arrival dropped for want of a free slot, or one cut off at the end.
func (s *Shard) RecordUnfinished(step int, class sample.Class) {
	s.mu.Lock()
	s.message(step, class, 0, nil, "", 1)
	s.steps[step].byClass[class]++
	s.steps[step].unfinished++
	s.win.failed[class]++
	if class == sample.Dropped {
		s.win.dropped++
	}
	s.mu.Unlock()
}

// lateDropMessage says why the dispatcher gave up on arrivals: not a busy
// target, but a generator that fell behind its own schedule.
const lateDropMessage = "arrival dropped: the generator fell more than 1s behind its schedule (it stalled, or the rate is more than it can start)"

// DroppedN counts n open-model arrivals dropped at once, against step:
// the dispatcher's bounded catch-up gives up on a whole run of overdue
// arrivals in one call, which at an absurd rate may be millions.
func (s *Shard) DroppedN(step int, n int64) {
	s.mu.Lock()
	s.message(step, sample.Dropped, 0, nil, lateDropMessage, n)
	s.steps[step].byClass[sample.Dropped] += n
	s.steps[step].unfinished += n
	s.win.failed[sample.Dropped] += n
	s.win.dropped += n
	s.mu.Unlock()
}

// Started counts an iteration start and how late it was against its
// intended time.
func (s *Shard) Started(lag time.Duration) {
	s.lag.record(toUS(lag))
}

// Tick closes the current interval: it drains every shard's live counts
// and swaps its failures out under its lock. A success recorded while
// Tick runs lands in this interval or the next, never in both nor in
// neither. target is the profile's intended users or rate at the
// interval's start.
func (r *Recorder) Tick(t float64, target float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tickOK.Reset()
	r.tickLag.Reset()
	var merged window
	var started, ok int64
	for _, sh := range r.shards {
		started += sh.lag.drain(&r.lagCum, r.tickLag)
		for i := range sh.steps {
			if h := sh.steps[i].ok.Load(); h != nil {
				ok += h.drain(sparseOf(&r.okCum[i]), r.tickOK)
			}
		}
		sh.mu.Lock()
		w := sh.win
		sh.win = window{}
		sh.mu.Unlock()
		merged.completed += w.completed
		merged.dropped += w.dropped
		for c := range w.failed {
			merged.failed[c] += w.failed[c]
		}
	}
	s := &r.series
	s.T = append(s.T, t)
	s.Started = append(s.Started, started)
	s.Completed = append(s.Completed, ok+merged.completed)
	s.OK = append(s.OK, ok)
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
	ps := r.tickOK.ValueAtPercentilesSlice([]float64{50, 95, 99})
	if ok == 0 {
		ps = []int64{0, 0, 0}
	}
	s.P50US = append(s.P50US, ps[0])
	s.P95US = append(s.P95US, ps[1])
	s.P99US = append(s.P99US, ps[2])
	s.Active = append(s.Active, r.Active.Load())
	s.InFlight = append(s.InFlight, r.InFlight.Load())
	s.Dropped = append(s.Dropped, merged.dropped)
	lag99 := int64(0)
	if started > 0 {
		lag99 = r.tickLag.ValueAtPercentile(99)
	}
	s.LagP99US = append(s.LagP99US, lag99)
	s.Target = append(s.Target, target)
	if r.TrackConnections {
		s.Connections = append(s.Connections, r.Connections.Load())
	}
}
