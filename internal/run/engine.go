package run

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/evloop"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
)

// Engine names, as the --engine flag and run.engine in a result say them.
const (
	EngineAuto       = "auto"
	EngineLoop       = evloop.Name
	EngineGoroutines = "goroutines"
)

// engineState is the event-loop engine of a run that uses it.
type engineState struct {
	// want is the resolved choice, EngineLoop or EngineGoroutines (a
	// string; unset before the load starts). A result built while the
	// run goes on (watchInPlace) reads it.
	want atomic.Value
	loop *evloop.Engine
	// open is an open model's loops, prepared before the clock starts
	// (prepared: the choice was made, open or not).
	open     *openLoopRun
	prepared bool
}

// loopDriver is the event-loop engine as the choice of a driver sees it
// (vu.Driver): what it supports, none where it does not exist, and its
// check of the one address it dials.
func loopDriver() vu.Driver {
	if !evloop.Available {
		return vu.Driver{Absent: evloop.ErrUnavailable.Error()}
	}
	return vu.Driver{Supports: vu.LoopSupports, CheckAddr: evloop.AddrIneligible}
}

// loopIneligible says why the event-loop engine cannot run prog's users
// ("" when it can): the allow-list's one rule (vu.Program.Refusal).
func loopIneligible(prog *vu.Program) string { return prog.Refusal(loopDriver()) }

// CheckEngineName refuses an engine name no engine has ("" is auto).
func CheckEngineName(choice string) error {
	switch choice {
	case "", EngineAuto, EngineLoop, EngineGoroutines:
		return nil
	}
	return fmt.Errorf("engine %q: expected auto, loop or goroutines", choice)
}

// checkEngine resolves the engine choice: auto takes the loop where it
// can run, and a forced loop it cannot run is an error that says why.
func checkEngine(prog *vu.Program, choice string) error {
	if err := CheckEngineName(choice); err != nil {
		return err
	}
	if choice == EngineLoop {
		if why := loopIneligible(prog); why != "" {
			return fmt.Errorf("engine loop cannot run this plan: %s (--engine auto runs goroutines for it)", why)
		}
	}
	return nil
}

// startEngine starts the event-loop engine when the choice and the plan
// allow it; otherwise users run as goroutines.
func (r *runner) startEngine() {
	r.eng.want.Store(EngineGoroutines)
	choice := r.opts.Engine
	if choice == EngineGoroutines || loopIneligible(r.prog) != "" {
		return
	}
	cfg := r.loopConfig()
	cfg.Left = func() { r.rec.Active.Add(-1) }
	e, err := evloop.New(cfg)
	if err != nil {
		// The address did not resolve, or no epoll: the goroutine
		// engine reports what a request then meets.
		return
	}
	r.eng.loop = e
	r.eng.want.Store(EngineLoop)
}

// engineName is what ran the HTTP users, for the result.
func (r *runner) engineName() string {
	if !r.prog.HasRequests() {
		return ""
	}
	if w, _ := r.eng.want.Load().(string); w != "" {
		return w
	}
	return EngineGoroutines
}

// startLoopUser makes the next user as newUser does, on a transport of
// the loop engine, and runs it there.
func (r *runner) startLoopUser(quit chan struct{}) closedUser {
	tr := r.eng.loop.NewTransport()
	u := r.newLoopUser(tr)
	r.rec.Active.Add(1)
	r.eng.loop.Start(u, tr, r.prog.ScenarioFor(u.ID-1), quit)
	return closedUser{u: u, quit: quit}
}

// newLoopUser makes the next user as newUser does, on tr.
func (r *runner) newLoopUser(tr *evloop.Transport) *vu.User {
	id := r.userID(r.nextID.Add(1))
	return r.newUserOn(id, r.plan.TenantOf(id), tr)
}

// openLoopRun is an open model's loops, prepared before the run's clock
// starts (prepareOpenLoop) and launched by runOpenLoop.
type openLoopRun struct {
	e      *evloop.Engine
	shares []*openArrivals
	over   chan struct{}
	// release gives back the spare P the loops run with (sparep.go).
	release  func()
	launched bool
}

// prepareOpen makes an open model's loops, once, with their first
// connections open (prepareOpenLoop), as the clock is about to start.
func (r *runner) prepareOpen() { r.prepareOpenOnce(true) }

// prepareOpenLate makes them, once, without opening any connection
// first: at a start time that has come already (a segment's), the dials
// would only add to the segment's late start, and past the tolerance
// its first arrivals would count as missed. Its arrivals dial for
// themselves.
func (r *runner) prepareOpenLate() { r.prepareOpenOnce(false) }

func (r *runner) prepareOpenOnce(preopen bool) {
	if r.eng.prepared {
		return
	}
	r.eng.prepared = true
	if r.prog.HasRequests() && r.plan.Load.Model == plan.Open {
		r.eng.open = r.prepareOpenLoop(preopen)
	}
}

// closeOpen lets an open model's loops go once its load is over, or the
// run ended before it (a cancelled wait for its start time: the
// connections they opened are closed), and gives the spare P back. A
// second call does nothing more.
func (r *runner) closeOpen() {
	o := r.eng.open
	if o == nil {
		return
	}
	if !o.launched {
		o.launched = true // nothing is left to close a second time
		o.e.Discard()
	}
	o.release()
}

// prepareOpenLoop makes the open model's loops when the choice and the
// plan allow it, their first connections open (evloop.Prepare), before
// the run's clock starts: the schedule's first arrivals are not kept
// waiting for those dials. Nil: goroutines run the arrivals (runOpen).
func (r *runner) prepareOpenLoop(preopen bool) *openLoopRun {
	r.eng.want.Store(EngineGoroutines)
	if r.opts.Engine == EngineGoroutines || loopIneligible(r.prog) != "" {
		return nil
	}
	// A loop per core, as the goroutine engine's workers use them all:
	// loop i takes every n-th of this segment's arrivals from the i-th,
	// and its share of the slots, the way segments share them (so at
	// most one loop per slot).
	maxSlots := r.segShare(r.plan.Load.MaxInFlight)
	base, release := holdSpareP(r.opts.MaxProcs)
	n := max(min(base, maxSlots), 1)
	o := &openLoopRun{over: make(chan struct{}), release: release}
	left := new(atomic.Int32)
	left.Store(int32(n))
	loops := make([]evloop.OpenLoop, n)
	for i := range loops {
		a := &openArrivals{r: r, sch: sched.NewArrivals(r.plan.Load.Stages), step: r.seg().Step() * int64(n), shard: r.rec.Shard(int64(i)), left: left, over: o.over}
		m := maxSlots / n
		if i < maxSlots%n {
			m++
		}
		o.shares = append(o.shares, a)
		loops[i] = evloop.OpenLoop{Arrivals: a, Max: m}
		if preopen {
			loops[i].Preopen = sched.Preopen(a.sch, a.step)
		}
	}
	cfg := r.loopConfig()
	cfg.Left = func() {}
	cfg.Open = &evloop.Open{
		Loops:   loops,
		NewUser: r.newLoopUser,
		Active:  func(d int64) { r.rec.Active.Add(d) },
	}
	e, err := evloop.Prepare(cfg)
	if err != nil {
		release()
		return nil // as startEngine
	}
	o.e = e
	return o
}

// runOpenLoop runs the open model's arrivals on the loops prepareOpenLoop
// made, until the schedule's end or the run's stop; false means there
// are none (runOpen runs goroutines).
func (r *runner) runOpenLoop() bool {
	o := r.eng.open
	if o == nil {
		return false
	}
	// Where this segment's share of the schedule begins is known once
	// the clock has started (firstArrival: a segment that starts late
	// skips what it missed).
	first := r.firstArrival(sched.NewArrivals(r.plan.Load.Stages))
	for i, a := range o.shares {
		a.k = first + int64(i)*r.seg().Step()
	}
	r.eng.loop = o.e
	r.eng.want.Store(EngineLoop)
	o.launched = true
	o.e.Launch()
	// The schedule ends when its last arrival was taken (started,
	// dropped), not at the clock's end of the profile: a loop behind it
	// still takes the rest, as runOpen's dispatcher does.
	select {
	case <-o.over:
		r.sleepUntil(r.start.Add(r.plan.Load.Duration()))
	case <-r.soft:
	}
	return true
}

// openArrivals is runOpen's schedule as a loop takes its share: the same
// arrivals of this segment (firstArrival, then every step-th, step being
// the segment's times the loops'), the same bound on lateness
// (maxCatchUp, dropOverdue) and the same dropped count.
type openArrivals struct {
	r     *runner
	sch   *sched.Arrivals
	k     int64
	step  int64
	shard *metrics.Shard
	// left counts the loops whose last arrival is not yet taken; over is
	// closed when none is left.
	left   *atomic.Int32
	over   chan struct{}
	closed bool
}

func (a *openArrivals) Take(now, horizon time.Time) (*vu.Scenario, time.Time, bool) {
	r := a.r
	if now.Before(r.start) {
		horizon = now // nothing starts before the run does, not even batched
	}
	for {
		at, ok := a.sch.Time(a.k)
		if !ok {
			return nil, time.Time{}, false
		}
		// Lateness is judged at now, as the goroutine dispatcher judges
		// it: the horizon's batch must not drop an arrival a millisecond
		// sooner.
		el := now.Sub(r.start)
		if el-at > maxCatchUp {
			a.k = r.dropOverdueStep(a.k, a.sch.Before(el-maxCatchUp), a.step, a.shard)
			continue
		}
		if at > horizon.Sub(r.start) {
			return nil, time.Time{}, false
		}
		sc := r.prog.ScenarioFor(a.k)
		a.k += a.step
		return sc, r.start.Add(at), true
	}
}

func (a *openArrivals) Next() (time.Time, bool) {
	at, ok := a.sch.Time(a.k)
	if !ok && !a.closed {
		a.closed = true
		if a.left.Add(-1) == 0 {
			close(a.over)
		}
	}
	return a.r.start.Add(at), ok
}

func (a *openArrivals) Drop(sc *vu.Scenario) {
	a.shard.RecordUnfinished(sc.FirstRequestStep(), sample.Dropped)
}

// loopConfig is what both models' loops take of the run.
func (r *runner) loopConfig() evloop.Config {
	return evloop.Config{
		Prog:      r.prog,
		Rec:       r.rec,
		Soft:      r.soft,
		MaxHeader: r.plan.HTTP.MaxHeaderBytes,
		MaxKept:   r.plan.HTTP.MaxKeptBodyBytes,
		Hold:      func() { r.wg.Add(1) },
		Release:   r.wg.Done,
		InFlight:  &r.rec.InFlight,
		Shared:    r.shared,
		Loops:     cpus(),
		// A loop that can no longer wait ends its users' requests as
		// failed and leaves; the run stops with it, partial, saying why,
		// rather than report a load that was not sent.
		Fail: func(err error) { r.stop(err.Error()+"; the run stopped", true) },
	}
}
