// Package run drives one test: it starts users (closed model) or arrivals
// (open model) as the plan's stages say, keeps the per-second series, stops
// cleanly at the end or on request, and builds the result.
package run

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/vu"
)

// Progress is what the live display shows, once per interval.
type Progress struct {
	Elapsed, Total time.Duration
	RPS            float64
	P95US          int64
	Requests       int64
	Failed         int64
	Active         int64
	InFlight       int64
	Dropped        int64
	Model          plan.Model
}

// Options tune a run.
type Options struct {
	// BaseURL replaces the plan's target (used for target: demo).
	BaseURL string
	Version string
	TLS     *tls.Config
	// TLSAdvice, when set, is what a failed TLS check before the load
	// tells the user to change (nil: PlanTLSAdvice, the plan's keys).
	TLSAdvice *TLSAdvice
	// Interval is the series resolution (default 1s).
	Interval time.Duration
	// CheckpointEvery is how often Checkpoint gets a partial result
	// (default 5s), so a crash loses at most that much.
	CheckpointEvery time.Duration
	Checkpoint      func(*result.Result)
	Progress        func(Progress)
	// SkipPreflight skips the reachability check of the target.
	SkipPreflight bool
	// Handle, when set, gives the caller partial results of the run once
	// its load has started (handle.go).
	Handle *Handle
	// OnPhase, when set, hears the run (or a Lifecycle's Setup and
	// Teardown) enter its setup, return to the load after it, and enter
	// its teardown (workflow.go), so a Ctrl-C can say what it does there.
	OnPhase func(Phase)
	// Monitors are the server-side collectors to run beside the load
	// (monitors.go); nil means the plan's. The generator's own process is
	// always recorded as well.
	Monitors []collect.Spec
	// MonitorWarning, when set, hears each monitor that could not start
	// (the run goes on without it).
	MonitorWarning func(msg string)
	// Segment is this process's part of a distributed test (segment.go);
	// the zero value runs the whole test.
	Segment Segment
	// StartAt, when set, is the wall-clock instant every segment starts
	// at; the run waits for it, and fails with ErrLateStart when it comes
	// up more than StartGrace (default DefaultStartGrace) after it.
	StartAt    time.Time
	StartGrace time.Duration
	// InPlace, when set, is called once, with the result so far, when the
	// profile's last stage has begun and the population is in place: every
	// closed-model user started and every connection open or failed at
	// least once (inplace.go). Levels measure from there.
	InPlace func(*result.Result)
	// Carry, when set, continues data rows from earlier runs given the
	// same carry (the levels of a gate or sweep).
	Carry *vu.Carry
	// Lifecycle, when set, makes this run one of several runs of one test
	// for the plan's setup and teardown (workflow.go): the setup runs in
	// the first only, and the teardown is left to the lifecycle's owner.
	Lifecycle *Lifecycle
	// End, when closed, ends the run as if its stages were over: nothing
	// new starts, work in flight gets the grace period, the result is
	// complete.
	End <-chan struct{}
	// Planned, when set, is the run's planned length as the user knows
	// it, where End ends the run before its profile does (a level: its
	// ramp and hold, where the profile holds longer for a ramp that may
	// overrun); an interrupt's reason names it.
	Planned time.Duration
	// Errors says how many distinct failure messages each step keeps,
	// how they are redacted, and where failing exchanges are sampled.
	Errors metrics.ErrorOptions
	// Engine picks what runs closed-model HTTP users (engine.go):
	// "" or "auto", "loop" or "goroutines".
	Engine string
	// MaxProcs, when set, lets an open model's loops run with a P to
	// spare (sparep.go); nil leaves GOMAXPROCS as it is.
	MaxProcs *MaxProcs
}

// ErrUnreachable means the target refused or did not answer before any
// load was sent.
var ErrUnreachable = errors.New("target unreachable")

// ErrSetupCut means the run was cancelled (Ctrl-C) while its setup ran:
// it did not fail, and no load was sent.
var ErrSetupCut = errors.New("setup cut off by Ctrl-C")

// setupErr is the error of a setup that did not finish.
func setupErr(ctx context.Context, ph *result.Phase) error {
	if ctx.Err() != nil {
		ph.Error = "cut off by " + InterruptName(ctx)
		if name := InterruptName(ctx); name != "Ctrl-C" {
			return fmt.Errorf("%w (it was %s) after %d of its requests; no load was sent", ErrSetupCut, name, ph.Requests)
		}
		return fmt.Errorf("%w after %d of its requests; no load was sent", ErrSetupCut, ph.Requests)
	}
	return fmt.Errorf("%w: %s; no load was sent", ErrSetup, ph.Error)
}

// createdSome says a setup that did not finish got some requests through:
// what they created is for the teardown to remove.
func createdSome(ph *result.Phase) bool { return ph.Requests > ph.Failed }

// Run executes p until its last stage ends or ctx is cancelled (Ctrl-C):
// then no new work starts, requests in flight get the plan's grace period,
// and whatever is still running is cut off and counted as interrupted. The
// result is complete unless ctx was cancelled.
func Run(ctx context.Context, p *plan.Plan, o Options) (*result.Result, error) {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.CheckpointEvery <= 0 {
		o.CheckpointEvery = 5 * time.Second
	}
	if o.Errors.Redact == nil {
		// Failure messages and samples echo requests: no text from the
		// environment may reach a result (plan.Redact).
		o.Errors.Redact = p.Redact
	}
	base := o.BaseURL
	if base == "" {
		base = p.Target
	}
	if err := checkSegment(p, o.Segment); err != nil {
		return nil, err
	}
	prog, err := vu.Compile(p, base, "stampede/"+o.Version, o.TLS)
	if err != nil {
		return nil, err
	}
	prog.Seed = runSeed(p, o.Carry)
	if o.Carry != nil {
		o.Carry.Adopt(prog)
	}
	prog.SetSegment(o.Segment.Norm().Index, o.Segment.Norm().Count)
	if err := checkEngine(prog, o.Engine); err != nil { // engine.go
		return nil, err
	}
	if err := preflightRun(p, base, o); err != nil {
		return nil, err
	}
	r := newRunner(p, prog, base, o)
	// One runaway script would only be followed by the next: the run
	// stops, with what it measured, rather than crash on "out of memory".
	prog.ScriptMemoryHit = func(msg string) {
		r.stop("memory budget hit: "+msg+"; the run stopped", true)
	}
	r.rec.Configure(o.Errors)
	defer r.shared.Close()
	// Lateness is the process's own, judged when it comes up: a setup
	// that takes longer than the start's lead is no late start, and
	// segments that run the same setup end it about together.
	if err := checkLate(o); err != nil {
		return nil, err
	}
	// Registered before the setup: a setup that created data and then
	// failed, or was cut off, leaves that data to clean up.
	defer r.teardownPhase()
	if err := r.setupPhase(ctx); err != nil { // workflow.go
		return nil, err
	}
	if err := r.startMonitors(ctx); err != nil {
		return nil, err
	}
	defer r.mon.stop()
	// Whatever ends the run, an open model's prepared loops are let go
	// (engine.go).
	defer r.closeOpen()
	if err := waitStart(ctx, o, r.prepareOpen); err != nil {
		return nil, err
	}
	res, err := r.run(ctx)
	r.loadOver(res)
	return r.finishWorkflow(res, err) // workflow.go: the teardown
}

// loadOver keeps the load's result for the time of the teardown, which
// may take TeardownTimeout: a second Ctrl-C meanwhile saves this result
// (afterLoad) instead of a partial snapshot, and a checkpoint puts it on
// disk before the teardown starts, so a process killed during the
// teardown still leaves the whole load measured.
func (r *runner) loadOver(res *result.Result) {
	if res == nil || r.plan.Teardown == nil || r.opts.Lifecycle != nil {
		return
	}
	r.keepLoad(res)
	if r.opts.Checkpoint == nil {
		return
	}
	cp := r.afterLoad("")
	cp.Run.Partial = true
	cp.Run.PartialReason = "the load completed; the process ended during the teardown, before the final write"
	if cp.Workflow != nil && cp.Workflow.Teardown == nil {
		cp.Workflow.Teardown = &result.Phase{Error: "not finished: the process ended during the teardown"}
	}
	r.opts.Checkpoint(cp)
}

// afterLoad is the load's result once the load is over and its teardown
// may still run; nil before. With a reason (the process quits) a teardown
// that has not finished is marked cut off with it; the load itself stays
// complete, since every request of it was waited for.
func (r *runner) afterLoad(reason string) *result.Result {
	res := r.keptLoad()
	if res == nil {
		return nil
	}
	cp := *res
	r.workflowInto(&cp)
	if reason != "" && cp.Workflow != nil && cp.Workflow.Teardown == nil {
		cp.Workflow.Teardown = &result.Phase{Error: "cut off before it finished: " + reason}
	}
	return &cp
}

// newRunner prepares the run of a compiled plan; the caller closes
// r.shared.
func newRunner(p *plan.Plan, prog *vu.Program, base string, o Options) *runner {
	return &runner{
		plan:    p,
		prog:    prog,
		opts:    o,
		base:    base,
		rec:     metrics.New(prog.Steps, o.Interval.Seconds()),
		shared:  newShared(p, o),
		stopper: newStopper(),
	}
}

func newShared(p *plan.Plan, o Options) *httpc.Shared {
	return httpc.NewShared(httpc.Options{
		TLS:               o.TLS,
		NewConnPerRequest: p.HTTP.Reuse == plan.ReusePerRequest,
		SourceAddrs:       p.HTTP.SourceAddresses,
		MaxConnsPerHost:   segmentConnCap(p.HTTP.MaxConnsPerHost, o.Segment),
		MaxHeaderBytes:    p.HTTP.MaxHeaderBytes,
		MaxKeptBody:       p.HTTP.MaxKeptBodyBytes,
		Protocol:          protocolOf(p.HTTP.Version),
		H2Shared:          p.HTTP.H2Shared,
		Proxy:             p.HTTP.Proxy.Func(),
	})
}

// protocolOf maps http.version to the transports' protocol.
func protocolOf(v plan.HTTPVersion) httpc.Protocol {
	switch v {
	case plan.VersionHTTP1:
		return httpc.ProtoHTTP1
	case plan.VersionH2:
		return httpc.ProtoH2
	case plan.VersionH2C:
		return httpc.ProtoH2C
	}
	return httpc.ProtoAuto
}

// preflightRun checks, before any load, that the target answers and
// that TLS to it and to the wss/https connection URLs completes. A target
// behind a proxy may not be reachable without it: its first requests,
// through the proxy, say what a direct dial could not. A target nothing
// goes to (every URL absolute, or no target at all) is neither needed
// nor checked.
func preflightRun(p *plan.Plan, base string, o Options) error {
	if o.SkipPreflight {
		return nil
	}
	advice := PlanTLSAdvice
	if o.TLSAdvice != nil {
		advice = *o.TLSAdvice
	}
	if base != "" && p.UsesTarget() && !p.HTTP.Proxy.ProxiedURL(base) {
		if err := preflight(base, o.TLS, advice); err != nil {
			return err
		}
	}
	return preflightConnTLS(p, o.TLS, advice)
}

func preflight(base string, conf *tls.Config, advice TLSAdvice) error {
	ep, err := vu.EndpointOf(base)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", ep.Addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, base, err)
	}
	defer c.Close()
	if ep.Scheme == "https" {
		return checkTLS(c, base, ep.Addr, conf, advice)
	}
	return nil
}

// runner is one run: its inputs, the recorder every driver records into,
// and the parts that each do one job. The drivers (closedDriver,
// openDriver, the event loop's in engine.go) start the HTTP users; conns
// holds the connection populations; stopper says when and why new work
// ended; crowd holds the users to cut off and close at the end.
type runner struct {
	plan   *plan.Plan
	prog   *vu.Program
	opts   Options
	base   string
	rec    *metrics.Recorder
	shared *httpc.Shared
	mon    *monitors
	conns  *connRunner // connections.go; nil without connection scenarios
	wf     workflow    // workflow.go

	stopper // stop.go
	crowd   // crowd.go

	start time.Time
	// late is how far into the shared schedule the load began (a setup
	// that overran the start time): that part of the profile was skipped.
	late time.Duration
	cpu0 time.Duration
	// segPeak is the result's max_users (segMaxUsers), found once.
	segPeakOnce sync.Once
	segPeak     int
	// inPlaceConns: the connection populations are in place (inplace.go).
	inPlaceConns atomic.Bool
	// eng is the event-loop engine when it runs the users (engine.go).
	eng engineState
}

func (r *runner) newUser() *vu.User {
	id := r.userID(r.nextID.Add(1))
	return r.newUserAs(id, r.plan.TenantOf(id))
}

// newUserAs makes the user with a given whole-test id and tenant (0: none);
// waves number their users themselves (waves.go).
func (r *runner) newUserAs(id int64, tenant int) *vu.User {
	return r.newUserOn(id, tenant, r.shared.NewTransport())
}

// newUserOn makes the user with its transport (an event loop's, or the
// run's shared client's).
func (r *runner) newUserOn(id int64, tenant int, tr httpc.Transport) *vu.User {
	u := r.prog.NewUser(id, tr, r.rec)
	if tenant > 0 {
		u.SetTenant(tenant)
	}
	if r.opts.Carry != nil {
		r.opts.Carry.Number(u)
	}
	r.join(u)
	return u
}

func (r *runner) run(ctx context.Context) (*result.Result, error) {
	r.cpu0 = cpuTime()
	// An open model's loops open their first connections right before
	// the clock starts (engine.go); with a start time, shortly before it
	// (waitStart), or not at all once it has come.
	ready := r.prepareOpen
	if !r.opts.StartAt.IsZero() {
		ready = r.prepareOpenLate
	}
	r.start = r.mon.loadStart(ctx, ready)
	if !r.opts.StartAt.IsZero() {
		r.start = r.opts.StartAt // one global schedule for every segment
		r.late = lateStart(r.start)
	}
	total := r.plan.Load.Duration()
	if r.late >= total { // workflow.go
		r.stop(missedProfile(r.late, total), true)
	}
	r.conns = startConnections(r) // connections.go
	if r.opts.Handle != nil {
		r.opts.Handle.attach(r)
	}

	tickDone := make(chan struct{})
	tickStop := make(chan struct{})
	go r.ticker(tickStop, tickDone)

	go func() {
		select {
		case <-ctx.Done():
			el := time.Since(r.start).Round(100 * time.Millisecond)
			r.stop(fmt.Sprintf("interrupted (%s) at %v of %v", InterruptName(ctx), el, cmp.Or(r.opts.Planned, total)), true)
		case <-r.opts.End:
			r.stop("", false)
		case <-r.soft:
		}
	}()
	go r.watchInPlace()

	switch {
	case !r.prog.HasRequests():
		// Connection scenarios only: no HTTP users to start.
		r.sleepUntil(r.start.Add(total))
	case r.plan.Load.Model == plan.Open:
		(&openDriver{runner: r}).runOpen()
	case len(r.plan.Waves) > 0:
		(&closedDriver{runner: r}).runWaves()
	default:
		(&closedDriver{runner: r}).runClosed()
	}
	r.stop("", false) // stages over: no new work

	// Grace: let requests in flight finish, then cut off the rest.
	r.crowd.finish(r.plan.Load.Grace)
	r.conns.stop()
	close(tickStop)
	<-tickDone
	r.mon.finish(ctx)
	res := r.build(false)
	// The load is over: the spare P goes back before any teardown.
	r.closeOpen() // engine.go
	return res, nil
}

// ticker closes series intervals on the run clock and checkpoints.
func (r *runner) ticker(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	iv := r.opts.Interval
	n := 1
	lastCheckpoint := time.Now()
	var lastReq int64
	for {
		next := r.start.Add(time.Duration(n) * iv)
		t := time.NewTimer(time.Until(next))
		select {
		case <-stop:
			t.Stop()
			// The last, partial interval.
			el := time.Since(r.start)
			r.rec.Tick(float64(n-1)*iv.Seconds(), r.segTarget(el))
			return
		case <-t.C:
		}
		at := time.Duration(n-1) * iv
		r.rec.Tick(at.Seconds(), r.segTarget(at))
		n++
		if r.opts.Progress != nil {
			r.opts.Progress(r.progress(&lastReq))
		}
		if r.opts.Checkpoint != nil && time.Since(lastCheckpoint) >= r.opts.CheckpointEvery {
			lastCheckpoint = time.Now()
			r.opts.Checkpoint(r.buildCheckpoint())
		}
	}
}

func (r *runner) progress(lastReq *int64) Progress {
	snap := r.rec.Series()
	p := Progress{Elapsed: time.Since(r.start), Total: r.plan.Load.Duration(), Model: r.plan.Load.Model,
		Active: r.rec.Active.Load(), InFlight: r.rec.InFlight.Load()}
	if n := len(snap.T); n > 0 {
		done := snap.Completed[n-1]
		p.RPS = float64(done) / snap.IntervalS
		p.P95US = snap.P95US[n-1]
	}
	for i := range snap.T {
		p.Requests += snap.Completed[i]
		p.Dropped += snap.Dropped[i]
		p.Failed += snap.Completed[i] - snap.OK[i]
	}
	p.Requests += p.Dropped
	p.Failed += p.Dropped
	return p
}

func (r *runner) handleIterErr(err error) {
	if errors.Is(err, vu.ErrDataExhausted) {
		r.stop(err.Error()+"; the run stopped starting new iterations", false)
	}
}
