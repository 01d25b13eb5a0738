// Package run drives one test: it starts users (closed model) or arrivals
// (open model) as the plan's stages say, keeps the per-second series, stops
// cleanly at the end or on request, and builds the result.
package run

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sched"
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
	// Errors says how many distinct failure messages each step keeps,
	// how they are redacted, and where failing exchanges are sampled.
	Errors metrics.ErrorOptions
	// Engine picks what runs closed-model HTTP users (engine.go):
	// "" or "auto", "loop" or "goroutines".
	Engine string
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
	if err := checkEngine(p, prog, o.Engine); err != nil { // engine.go
		return nil, err
	}
	if !o.SkipPreflight {
		if err := preflight(base, o.TLS); err != nil {
			return nil, err
		}
		if err := preflightConnTLS(p, o.TLS); err != nil {
			return nil, err
		}
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
	defer r.stopMonitors()
	if err := waitStart(ctx, o); err != nil {
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
	r.stopMu.Lock()
	r.loadRes = res
	r.stopMu.Unlock()
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
	r.stopMu.Lock()
	res := r.loadRes
	r.stopMu.Unlock()
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
		plan:   p,
		prog:   prog,
		opts:   o,
		base:   base,
		rec:    metrics.New(prog.Steps, o.Interval.Seconds()),
		shared: newShared(p, o),
		soft:   make(chan struct{}),
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

func preflight(base string, conf *tls.Config) error {
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
		return checkTLS(c, base, ep.Addr, conf)
	}
	return nil
}

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

	start   time.Time
	stopped time.Time // when no new work could start any more

	soft     chan struct{}
	softOnce sync.Once
	stopMu   sync.Mutex
	stopWhy  string
	partial  string
	// loadRes is the load's result while its teardown runs (loadOver).
	loadRes *result.Result

	usersMu sync.Mutex
	users   []*vu.User
	wg      sync.WaitGroup
	nextID  atomic.Int64

	maxUsers int
	// segPeak is the result's max_users (segMaxUsers), found once.
	segPeakOnce sync.Once
	segPeak     int
	cpu0        time.Duration
	// waiting holds closed-model users that wait (paced or thinking); see
	// startUser.
	waiting   userQueue
	schedOnce sync.Once
	// inPlaceConns: the connection populations are in place (inplace.go).
	inPlaceConns atomic.Bool
	// late is how far into the shared schedule the load began (a setup
	// that overran the start time): that part of the profile was skipped.
	late time.Duration
	// eng is the event-loop engine when it runs the users (engine.go).
	eng engineState
}

// stop ends the starting of new work; the first reason given wins.
func (r *runner) stop(reason string, partial bool) {
	r.stopMu.Lock()
	if r.stopped.IsZero() {
		r.stopped = time.Now()
		if partial {
			r.partial = reason
		} else {
			r.stopWhy = reason
		}
	}
	r.stopMu.Unlock()
	r.softOnce.Do(func() { close(r.soft) })
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
	r.usersMu.Lock()
	r.users = append(r.users, u)
	r.usersMu.Unlock()
	return u
}

func (r *runner) run(ctx context.Context) (*result.Result, error) {
	r.cpu0 = cpuTime()
	r.start = r.loadStart(ctx)
	if !r.opts.StartAt.IsZero() {
		r.start = r.opts.StartAt // one global schedule for every segment
		r.late = lateStart(r.start)
	}
	total := r.plan.Load.Duration()
	if r.late >= total { // workflow.go
		r.stop(missedProfile(r.late, total), true)
	}
	r.startConnections() // connections.go
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
			r.stop(fmt.Sprintf("interrupted (%s) at %v of %v", InterruptName(ctx), el, total), true)
		case <-r.opts.End:
			r.stop("", false)
		case <-r.soft:
		}
	}()
	go r.watchInPlace()

	switch {
	case !r.prog.HasRequests():
		r.runIdle() // connection scenarios only
	case r.plan.Load.Model == plan.Open:
		r.runOpen()
	case len(r.plan.Waves) > 0:
		r.runWaves()
	default:
		r.runClosed()
	}
	r.stop("", false) // stages over: no new work

	// Grace: let requests in flight finish, then cut off the rest.
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	grace := time.NewTimer(r.plan.Load.Grace)
	select {
	case <-done:
	case <-grace.C:
		r.usersMu.Lock()
		for _, u := range r.users {
			u.Interrupt()
		}
		r.usersMu.Unlock()
		<-done
	}
	grace.Stop()
	for _, u := range r.users {
		u.Close()
	}
	r.stopConnections()
	close(tickStop)
	<-tickDone
	r.finishMonitors(ctx)
	return r.build(false), nil
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

// sleepUntil waits for t or the soft stop; false means stop.
func (r *runner) sleepUntil(t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-r.soft:
			return false
		default:
			return true
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-r.soft:
		return false
	}
}

func (r *runner) handleIterErr(err error) {
	if errors.Is(err, vu.ErrDataExhausted) {
		r.stop(err.Error()+"; the run stopped starting new iterations", false)
	}
}

func gcPauseP99() time.Duration {
	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 101)
	debug.ReadGCStats(&st)
	if st.NumGC == 0 {
		return 0
	}
	return st.PauseQuantiles[99]
}

// build assembles the result from what was recorded so far.
func (r *runner) build(checkpoint bool) *result.Result {
	return r.buildFrom(r.rec.Snapshot(), checkpoint)
}

// buildCheckpoint is a checkpoint's result: its series end with the
// interval still open, so they add up to its totals (a kill -9 leaves a
// file whose every figure agrees with every other).
func (r *runner) buildCheckpoint() *result.Result {
	target := func(atS float64) float64 { return r.segTarget(time.Duration(atS * float64(time.Second))) }
	return r.buildFrom(r.rec.SnapshotOpen(target), true)
}

func (r *runner) buildFrom(snap metrics.Snapshot, checkpoint bool) *result.Result {
	now := time.Now()
	r.stopMu.Lock()
	stopped, partial, why := r.stopped, r.partial, r.stopWhy
	r.stopMu.Unlock()
	measuredEnd := stopped
	if measuredEnd.IsZero() || checkpoint {
		measuredEnd = now
	}
	// Over the time the load ran: a late start's missed part sent nothing.
	dur := max(measuredEnd.Sub(r.start.Add(r.late)), 0).Seconds()
	seed := r.prog.Seed
	res := &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: r.opts.Version},
		Plan:   PlanInfo(r.plan, r.base),
		Run: result.RunInfo{
			Started: r.start, Ended: now, DurationS: dur,
			Model: r.plan.Load.Model.String(), Paced: r.plan.Load.Pace > 0,
			Segment: r.resultSegment(),
			Partial: partial != "", PartialReason: partial, StopReason: why,
			Seed: &seed, Engine: r.engineName(),
			LateStartS: float64(r.late.Milliseconds()) / 1000,
		},
		Totals:     snap.Totals,
		Steps:      snap.Steps,
		Series:     snap.Series,
		Samples:    snap.Errors,
		ErrorsTop:  snap.ErrorsTop,
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
	if checkpoint && partial == "" {
		res.Run.Partial = true
		res.Run.PartialReason = fmt.Sprintf("run still in progress (checkpoint at %.0fs); the process ended before the final write", dur)
	}
	if r.plan.Load.Model == plan.Open || r.plan.Load.Pace > 0 {
		res.Run.LatencyFrom = "intended"
	} else {
		res.Run.LatencyFrom = "send"
	}
	if r.plan.Load.Model == plan.Open {
		res.Run.PeakRate = sched.MaxTarget(r.plan.Load.Stages) / float64(r.seg().Count)
	} else {
		res.Run.MaxUsers = r.segMaxUsers()
	}
	cpu := (cpuTime() - r.cpu0).Seconds()
	cores := runtime.GOMAXPROCS(0)
	host, _ := os.Hostname()
	g := result.Generator{Lag: snap.Lag, CPUSeconds: cpu, Cores: cores, Host: host, MaxRSS: maxRSS(),
		GCPauseP99US: gcPauseP99().Microseconds()}
	if snap.Totals.Requests > 0 {
		g.CPUPerRequestUS = cpu * 1e6 / float64(snap.Totals.Requests)
	}
	if dur > 0 {
		g.CPUUtil = cpu / (dur * float64(cores))
	}
	res.Generator = g
	r.monitorsInto(res, checkpoint)
	r.connectionsInto(res)
	r.workflowInto(res) // workflow.go
	res.TLS = r.shared.TLS()
	return res
}

// PlanInfo is what a result says of its plan: every result of one plan,
// a run's or a level stopped before it measured anything, carries the
// same identity, so merges can tell the plan's segments apart from
// another plan's.
func PlanInfo(p *plan.Plan, target string) result.PlanInfo {
	sum := sha256.Sum256(p.Source)
	return result.PlanInfo{Name: p.Name, File: p.File, SHA256: hex.EncodeToString(sum[:]),
		Source: p.Redact(string(p.Source)), Target: target}
}
