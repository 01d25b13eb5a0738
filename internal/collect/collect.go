package collect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// Problem is a monitor that could not start, a failed or overrunning
// sample, or a monitor that did not stop in time.
type Problem = result.MonitorProblem

// Severities of a Problem.
const (
	SeverityError = "error"
	SeverityWarn  = "warn"
)

// MaxPoints bounds each series: at the default 1 s interval, ten hours. A
// longer run halves the resolution of the whole series rather than drop
// its start or grow without end.
const MaxPoints = 36000

// maxProblems bounds a monitor's problem list; repeats fold into one entry
// already, so this only bites on a monitor failing in ever new ways.
const maxProblems = 100

// stopWait is how long Stop waits for monitors still in a sample. A
// monitor stuck past it is left behind (its goroutine ends when its
// sample's timeout fires) and reported, so a dead server never holds up
// the end of a run.
const stopWait = 2 * time.Second

// collector is one kind of monitor. open is called once; sample once per
// interval, never concurrently with itself; close once, after the last
// sample.
type collector interface {
	open(ctx context.Context) error
	sample(ctx context.Context, e *emitter) error
	close()
}

// Set is the running monitors of one run.
type Set struct {
	cancel   context.CancelFunc
	monitors []*monitor
	clock    func() float64
	stopOnce sync.Once
	final    map[string]result.MonitorSeries
	finalP   []Problem
}

// Start validates specs, connects every monitor (in parallel, each bounded
// by its timeout), and starts sampling. clock gives seconds since the run
// start — the same clock as the load series; nil means seconds since Start.
//
// ctx bounds connecting only: cancelling it later (Ctrl-C) does not stop
// sampling, because the monitors should see the grace period and the
// drain too; Stop ends them.
//
// A monitor that cannot connect is a Problem: "warn", and the run goes on
// without it, or "error" when it is Required, in which case err is set,
// nothing is left running and set is nil. err is also set, with nothing
// started, when a spec is invalid.
func Start(ctx context.Context, specs []Spec, clock func() float64) (set *Set, problems []Problem, err error) {
	if err := checkSpecs(specs); err != nil {
		return nil, nil, err
	}
	if clock == nil {
		t0 := time.Now()
		clock = func() float64 { return time.Since(t0).Seconds() }
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Set{cancel: cancel, clock: clock}

	ms := make([]*monitor, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, sp := range specs {
		ms[i] = newMonitor(sp, clock)
		wg.Go(func() {
			cctx, ccancel := context.WithTimeout(ctx, sp.connectTimeout())
			defer ccancel()
			errs[i] = ms[i].c.open(cctx)
		})
	}
	wg.Wait()

	var required []string
	for i, m := range ms {
		if errs[i] == nil {
			s.monitors = append(s.monitors, m)
			continue
		}
		sev := SeverityWarn
		if m.spec.Required {
			sev = SeverityError
		}
		msg := fmt.Sprintf("cannot start %s: %s", m.spec, m.errText(errs[i]))
		if !m.spec.Required {
			msg += "; the run goes on without it"
		}
		problems = append(problems, Problem{Monitor: m.label, Severity: sev, Message: msg, T: clock()})
		if m.spec.Required {
			required = append(required, msg)
		}
	}
	if len(required) > 0 {
		for _, m := range s.monitors {
			m.c.close()
		}
		cancel()
		return nil, problems, errors.New(strings.Join(required, "\n"))
	}
	for _, m := range s.monitors {
		go m.loop(mctx)
	}
	return s, problems, nil
}

// Snapshot returns what has been collected so far without stopping, for
// the checkpoints written during long runs.
func (s *Set) Snapshot() (map[string]result.MonitorSeries, []Problem) {
	out := make(map[string]result.MonitorSeries)
	var probs []Problem
	for _, m := range s.monitors {
		m.mu.Lock()
		m.rec.copyInto(out, m.label)
		probs = append(probs, m.problems...)
		m.mu.Unlock()
	}
	return out, probs
}

// Stop ends sampling and returns every series collected, keyed like
// "postgres.connections.active", with the problems met since Start. It
// waits at most stopWait for monitors in the middle of a sample; one still
// busy then is reported, and what it had collected is returned all the
// same. Stop may be called more than once and returns the same each time.
func (s *Set) Stop() (map[string]result.MonitorSeries, []Problem) {
	if s == nil {
		return map[string]result.MonitorSeries{}, nil
	}
	s.stopOnce.Do(func() {
		s.cancel()
		wctx, wcancel := context.WithTimeout(context.Background(), stopWait)
		defer wcancel()
		for _, m := range s.monitors {
			select {
			case <-m.done:
			case <-wctx.Done():
				m.addProblem(SeverityWarn, fmt.Sprintf("did not stop within %v (a sample was still running); its last sample is missing", stopWait), s.clock())
			}
		}
		s.final, s.finalP = s.Snapshot()
	})
	return s.final, s.finalP
}

// Labels lists the running monitors' series prefixes.
func (s *Set) Labels() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.monitors))
	for i, m := range s.monitors {
		out[i] = m.label
	}
	return out
}

type monitor struct {
	spec    Spec
	label   string
	c       collector
	clock   func() float64
	secrets []string
	done    chan struct{}

	mu       sync.Mutex // guards rec and problems; held only to copy in or out
	rec      recorder
	problems []Problem
	failing  bool
}

func newMonitor(sp Spec, clock func() float64) *monitor {
	m := &monitor{spec: sp, label: sp.Label(), clock: clock, secrets: secrets(sp.Target), done: make(chan struct{})}
	m.rec.series = make(map[string]*series)
	switch sp.Kind {
	case KindPostgres:
		m.c = &pgCollector{spec: sp}
	case KindRedis:
		m.c = &redisCollector{spec: sp}
	case KindPrometheus:
		m.c = newPromCollector(sp)
	case KindProcess:
		m.c = newProcCollector(sp)
	case KindHost:
		m.c = newHostCollector()
	}
	return m
}

// errText is an error as people may see it: one line, credentials out.
func (m *monitor) errText(err error) string {
	msg := scrub(err.Error(), m.secrets)
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

func (m *monitor) loop(ctx context.Context) {
	defer close(m.done)
	defer m.c.close()
	iv := m.spec.interval()
	tick := time.NewTicker(iv)
	defer tick.Stop()
	var e emitter
	for {
		m.sampleOnce(ctx, &e, iv)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *monitor) sampleOnce(ctx context.Context, e *emitter, iv time.Duration) {
	sctx, cancel := context.WithTimeout(ctx, m.spec.sampleTimeout())
	e.points, e.warnings = e.points[:0], e.warnings[:0]
	t0 := m.clock()
	start := time.Now()
	err := m.c.sample(sctx, e)
	took := time.Since(start)
	cancel()
	if ctx.Err() != nil {
		// Stopping: a sample cut short by Stop is not a server problem.
		return
	}
	t := (t0 + m.clock()) / 2
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.failing = true
		m.addProblemLocked(SeverityWarn, "sample failed: "+m.errText(err), t)
		return
	}
	if m.failing {
		m.failing = false
		// Rates across the outage would average the gap; start afresh.
		m.rec.forgetPrev()
	}
	if took > iv {
		m.addProblemLocked(SeverityWarn, fmt.Sprintf("a sample took longer than the %v interval; samples were skipped", iv), t)
	}
	for _, w := range e.warnings {
		m.addProblemLocked(SeverityWarn, scrub(w, m.secrets), t)
	}
	m.rec.record(t, e.points)
}

func (m *monitor) addProblem(sev, msg string, t float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.addProblemLocked(sev, msg, t)
}

func (m *monitor) addProblemLocked(sev, msg string, t float64) {
	if n := len(m.problems); n > 0 {
		last := &m.problems[n-1]
		if last.Message == msg {
			if last.Count == 0 {
				last.Count = 1
			}
			last.Count++
			last.LastT = t
			return
		}
	}
	if len(m.problems) >= maxProblems {
		return
	}
	m.problems = append(m.problems, Problem{Monitor: m.label, Severity: sev, Message: msg, T: t})
}

// A point is one reading a collector makes in a sample.
type point struct {
	name, unit string
	kind       pointKind
	a, b       float64 // the value; for ratios a is the numerator, b the denominator
	scale      float64
}

type pointKind uint8

const (
	gaugePoint pointKind = iota // a level: recorded as is
	ratePoint                   // a cumulative counter: recorded as scale × Δa/Δt
	ratioPoint                  // two counters: recorded as scale × Δa/Δb over the interval
)

// emitter collects a sample's points; it is reused between samples.
type emitter struct {
	points []point
	// warnings are problems that do not fail the sample.
	warnings []string
}

func (e *emitter) warn(msg string) { e.warnings = append(e.warnings, msg) }

func (e *emitter) gauge(name, unit string, v float64) {
	e.points = append(e.points, point{name: name, unit: unit, kind: gaugePoint, a: v})
}

// rate records counter c as a per-second rate times scale (100 turns
// CPU-seconds into percent of one core).
func (e *emitter) rate(name, unit string, c, scale float64) {
	e.points = append(e.points, point{name: name, unit: unit, kind: ratePoint, a: c, scale: scale})
}

// ratio records Δnum/Δden × scale over each interval, so a cache hit ratio
// shows the run, not the server's lifetime since boot.
func (e *emitter) ratio(name, unit string, num, den, scale float64) {
	e.points = append(e.points, point{name: name, unit: unit, kind: ratioPoint, a: num, b: den, scale: scale})
}

// recorder turns points into series.
type recorder struct {
	series map[string]*series
	// stride: only every stride-th sample is kept, after MaxPoints forced
	// the series to thin out.
	stride, n int
}

type series struct {
	unit         string
	t, v         []float64
	prevA, prevB float64
	prevT        float64
	havePrev     bool
}

func (r *recorder) record(t float64, pts []point) {
	if r.stride == 0 {
		r.stride = 1
	}
	keep := r.n%r.stride == 0
	r.n++
	for _, p := range pts {
		s := r.series[p.name]
		if s == nil {
			s = &series{unit: p.unit}
			r.series[p.name] = s
		}
		v, ok := s.value(t, p)
		if !ok || !keep {
			continue
		}
		s.t = append(s.t, t)
		s.v = append(s.v, v)
		if len(s.t) >= MaxPoints {
			r.thin()
		}
	}
}

// value turns a point into the value to record; counters still update
// their previous reading when the sample is not kept.
func (s *series) value(t float64, p point) (float64, bool) {
	switch p.kind {
	case gaugePoint:
		return p.a, !math.IsNaN(p.a) && !math.IsInf(p.a, 0)
	case ratePoint:
		prevA, prevT, had := s.prevA, s.prevT, s.havePrev
		s.prevA, s.prevT, s.havePrev = p.a, t, true
		dt := t - prevT
		if !had || dt <= 0 {
			return 0, false
		}
		d := p.a - prevA
		if d < 0 {
			// The counter went back: the server restarted. Like Prometheus'
			// rate(), count from zero rather than record a negative rate.
			d = p.a
		}
		return d / dt * p.scale, true
	case ratioPoint:
		prevA, prevB, had := s.prevA, s.prevB, s.havePrev
		s.prevA, s.prevB, s.havePrev = p.a, p.b, true
		db := p.b - prevB
		if !had || db <= 0 {
			// Nothing happened this interval (no block read, no key looked
			// up): there is no ratio, and 0 would be a lie.
			return 0, false
		}
		return (p.a - prevA) / db * p.scale, true
	}
	return 0, false
}

// thin halves every series' resolution by keeping every other point.
func (r *recorder) thin() {
	for _, s := range r.series {
		j := 0
		for i := 0; i < len(s.t); i += 2 {
			s.t[j], s.v[j] = s.t[i], s.v[i]
			j++
		}
		s.t, s.v = s.t[:j], s.v[:j]
	}
	r.stride *= 2
}

func (r *recorder) forgetPrev() {
	for _, s := range r.series {
		s.havePrev = false
	}
}

func (r *recorder) copyInto(out map[string]result.MonitorSeries, label string) {
	for name, s := range r.series {
		if len(s.t) == 0 {
			continue
		}
		out[label+"."+name] = result.MonitorSeries{
			Unit: s.unit,
			T:    append([]float64(nil), s.t...),
			V:    append([]float64(nil), s.v...),
		}
	}
}
