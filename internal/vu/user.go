package vu

import (
	"context"
	"math/rand/v2"
	"net/http/cookiejar"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
)

// User is one virtual user. Its methods run on one goroutine, except
// Interrupt.
type User struct {
	ID    int64
	prog  *Program
	tr    httpc.Transport
	shard *metrics.Shard
	env   plan.Env
	rng   *rand.Rand
	iter  int64

	req     httpc.Request
	resp    httpc.Response
	scratch []byte
	msg     []byte // a failure's message (failures.go), reused
	hdrBuf  []byte
	spans   [][2]int
	jar     *cookiejar.Jar
	dynEP   map[string]*httpc.Endpoint
	redir   *redirectState // redirect.go
	body    bodyState      // body.go
	script  scriptState    // script.go

	// ans is the answer being judged, as captures and checks read it
	// (capture.go).
	ans answer
	// secretVals are the current answer's secret captures, by capture
	// index, taken before its checks (secrets.go).
	secretVals []capturedValue
	// noted are the credentials this user has noted (secrets.go).
	noted map[string]struct{}

	// Between segments of an iteration: when the next request's latency
	// starts (zero: at send) and a clock reading to reuse as its send time.
	from, sent time.Time
	timer      *time.Timer

	interrupted atomic.Bool
	// flow is the user's once, loop and renewal state (flow.go); renewOn
	// is the statuses that renew the step being sent (nil: none), and
	// renewHit says its answer had one.
	flow     flowState
	renewOn  []plan.StatusMatch
	renewHit bool
	// inFlight is the gauge of requests on the wire, shared by the run.
	inFlight *atomic.Int64
	// stop is what ends the user's work, looked at between steps as well
	// as in think (Iterate sets it; SetStop for callers of Segment); cut
	// says the current iteration was ended by it.
	stop Stop
	cut  bool
}

// NewUser makes user id with its own transport and metrics shard.
func (p *Program) NewUser(id int64, tr httpc.Transport, rec *metrics.Recorder) *User {
	u := &User{
		ID:       id,
		prog:     p,
		tr:       tr,
		shard:    rec.Shard(id),
		rng:      userRand(p.Seed, id), // feed.go
		inFlight: &rec.InFlight,
	}
	u.env = plan.Env{Captures: make([]string, p.maxCaptures), Rows: make([][]string, len(p.Plan.Data)), VU: id, Rand: u.rng, Globals: p.globals}
	u.flow.onceDone = make([]bool, len(p.Scenarios))
	if p.maxLoops > 0 {
		u.flow.loops = make([]loopState, p.maxLoops)
	}
	return u
}

// SetTenant sets the tenant id templates see.
func (u *User) SetTenant(t int) { u.env.Tenant = t }

// Interrupt cuts off the user's request in flight at the end of the run;
// it is then counted as interrupted, not lost.
func (u *User) Interrupt() {
	u.interrupted.Store(true)
	u.tr.Interrupt()
}

// Close releases the user's connections.
func (u *User) Close() { u.tr.Close() }

// Stop tells a user when to stop thinking: Soft is closed when no new work
// may start (end of stage or Ctrl-C), Retire when a ramp-down retires this
// user (nil: never). Two channels rather than one merged by a goroutine,
// because a goroutine per user is memory that idle users cannot spare.
type Stop struct {
	Soft   <-chan struct{}
	Retire <-chan struct{}
}

// Iterate runs one iteration of sc. intended is when it was due; latency of
// its first request counts from there (the open model, and paced users).
// A zero intended means the user is not scheduled: latencies count from
// send. It returns ErrDataExhausted when a unique data source ran out, and
// context.Canceled when the iteration was abandoned at a stop.
func (u *User) Iterate(sc *Scenario, intended time.Time, stop Stop) error {
	u.stop = stop
	if err := u.Begin(sc, intended); err != nil {
		return err
	}
	defer u.End()
	for pc := 0; ; {
		next, think, end := u.Segment(sc, pc)
		if end {
			if u.cut {
				return context.Canceled
			}
			return nil
		}
		if !u.Think(think, stop) {
			return context.Canceled
		}
		pc = next
	}
}

// Begin starts an iteration: it takes the data rows and counts the start.
// Begin, Segment, Think and End are Iterate in pieces, so a caller can run
// the request steps on a worker goroutine and think on its own small stack.
func (u *User) Begin(sc *Scenario, intended time.Time) error {
	for _, di := range sc.DataUsed {
		row, err := u.prog.Feeders[di].NextFor(u.env.Tenant, u.rng)
		if err != nil {
			return err
		}
		u.env.Rows[di] = row
	}
	u.env.Iter = u.iter
	u.iter++
	u.cut = false
	u.flow.begin()
	// A header a script set for a request that was never sent (its if:
	// was false) is not for this iteration's first request.
	u.clearScriptHeaders() // script.go
	now := time.Now()
	// from is when the next request's latency starts counting; zero means
	// at its send. A scheduled iteration counts from when it was due, and a
	// think step before the first request moves that point by the think.
	u.from = time.Time{}
	if intended.IsZero() {
		u.shard.Started(0)
	} else {
		u.shard.Started(now.Sub(intended))
		u.from = intended
	}
	u.sent = now
	return nil
}

// End finishes an iteration.
func (u *User) End() {
	// Nothing looks at the last answer's headers after its iteration; an
	// idle user holds no header storage (httpc/headerbufs.go).
	u.resp.Release()
	if u.prog.Plan.HTTP.Reuse == plan.ReusePerIteration {
		// Users who come and go open a connection per visit.
		u.tr.Close()
	}
}

// SetStop gives a user driven through Segment (not Iterate) the stop its
// loops and script steps look at.
func (u *User) SetStop(s Stop) { u.stop = s }

// stopped says the user should start nothing more: the stage ended, the
// run was interrupted (Ctrl-C, or the grace is over), or the user was
// retired. It is looked at where an iteration could otherwise run on
// without a think step: each pass of a loop and each script call.
func (u *User) stopped() bool {
	if u.interrupted.Load() {
		return true
	}
	select {
	case <-u.stop.Soft:
		return true
	case <-u.stop.Retire:
		return true
	default:
		return false
	}
}

// cutOff ends the iteration at a stop. Nothing failed: like a think cut
// off by the stop, it is work the user was not given time for.
func (u *User) cutOff() (next int, think time.Duration, end bool) {
	u.cut = true
	return 0, 0, true
}

// Segment runs steps from pc up to the next think step. It returns where to
// resume and how long to think first, or end when the iteration is over.
func (u *User) Segment(sc *Scenario, pc int) (next int, think time.Duration, end bool) {
	for pc < len(sc.Steps) {
		st := sc.Steps[pc]
		switch st.Kind {
		case plan.StepThink:
			d := u.thinkTime(st)
			if !u.from.IsZero() {
				u.from = u.from.Add(d)
			}
			u.sent = time.Time{}
			pc++
			if d <= 0 {
				continue
			}
			return pc, d, false
		case plan.StepRequest:
			u.renewOn = u.renewable(sc, pc) // flow.go
			ok := u.do(st, u.from, u.sent)
			u.from, u.sent = time.Time{}, time.Time{}
			if u.renewHit {
				// The answer said the once steps' captures (a token) are
				// stale: run them again, then this step once more.
				u.renewHit = false
				pc = u.renew(sc, pc)
				continue
			}
			if u.flow.retrying == pc {
				u.flow.retrying = -1
			}
			if !ok {
				if u.interrupted.Load() {
					// Cut off by the run's end: not the server's failure.
					return u.cutOff()
				}
				return u.failedAt(sc, pc)
			}
			pc++
		case plan.StepScript:
			// The next request's latency still counts from u.from; only
			// the clock reading to send it at is stale now.
			u.sent = time.Time{}
			if u.stopped() {
				return u.cutOff()
			}
			switch u.runScript(st) { // script.go
			case scriptStopped:
				return u.cutOff()
			case scriptFailed:
				return u.failedAt(sc, pc)
			}
			pc++
		default:
			// Every pass of a loop begins at its StepNext: the loop's
			// back-edge, where a loop without think would otherwise run
			// on past the end of the test.
			if st.Kind == plan.StepNext && u.stopped() {
				return u.cutOff()
			}
			var ok bool
			at := pc
			if pc, ok = u.control(sc, st, pc); !ok { // flow.go
				return u.failedAt(sc, at)
			}
			if st.Kind == plan.StepIf && pc != at+1 {
				// The request a script's header() was for is skipped.
				u.clearScriptHeaders() // script.go
			}
		}
	}
	return 0, 0, true
}

// failedAt ends the iteration after the step at pc failed. Later steps
// usually need what this one should have captured; sending them anyway
// would count failures that are not the server's. The iteration ends here,
// but only after the think its remaining steps would have taken: a user
// that skipped it would come back at once, and a closed model whose target
// fails would multiply its load instead of keeping it.
func (u *User) failedAt(sc *Scenario, pc int) (next int, think time.Duration, end bool) {
	u.flow.failed = true
	from := pc + 1
	switch st := sc.Steps[pc]; st.Kind {
	case plan.StepIf:
		from = pc // its condition failed: which way it went is unknown
	case plan.StepLoop:
		from = st.Flow.Jump // its list failed: no pass runs
	}
	if d := u.remainingThink(sc, from); d > 0 {
		return len(sc.Steps), d, false
	}
	return 0, 0, true
}

// remainingThink is the think the rest of the iteration would have taken
// from pc on, on the path it would have gone: the rest of the loop passes
// it is in (as many as remain), then the steps after. A branch not yet
// taken counts as the longer of if and else, or the weighted mean of
// choose's branches; a loop not yet begun as its body times its repeat
// count (a for_each's list is unknown: once). Waits are drawn as they
// would have been, one draw per think step.
func (u *User) remainingThink(sc *Scenario, pc int) time.Duration {
	var d time.Duration
	for pc < len(sc.Steps) {
		st := sc.Steps[pc]
		switch st.Kind {
		case plan.StepGoto:
			if j := st.Flow.Jump; j < pc {
				// A loop's back-edge: the passes left of the loop the
				// failure was in, then what comes after it.
				next := sc.Steps[j]
				ls := &u.flow.loops[next.Flow.Loop]
				d += time.Duration(max(ls.n-ls.i, 0)) * u.regionThink(sc, j+1, pc)
				pc = next.Flow.Jump
				continue
			}
			pc = st.Flow.Jump // out of a branch
		case plan.StepNext:
			pc = st.Flow.Jump // the loop's list failed
		default:
			var dd time.Duration
			dd, pc = u.stepThink(sc, pc)
			d += dd
		}
	}
	return d
}

// skip is where the step after the one at pc (with all it governs)
// starts.
func skip(sc *Scenario, pc int) int {
	st := sc.Steps[pc]
	switch st.Kind {
	case plan.StepIf:
		end := st.Flow.Jump
		if g := sc.Steps[end-1]; g.Kind == plan.StepGoto && g.Flow.Jump > end {
			return g.Flow.Jump
		}
		return end
	case plan.StepLoop:
		return st.Flow.Jump
	case plan.StepChoose:
		return sc.Steps[closing(sc, st.Flow.Branches[0])].Flow.Jump
	}
	return pc + 1
}

// closing is the StepGoto that ends the branch starting at b.
func closing(sc *Scenario, b int) int {
	k := b
	for k < len(sc.Steps) && sc.Steps[k].Kind != plan.StepGoto {
		k = skip(sc, k)
	}
	return k
}

// regionThink is the think of steps [pc, end) taken whole.
func (u *User) regionThink(sc *Scenario, pc, end int) time.Duration {
	var d time.Duration
	for pc < end {
		var dd time.Duration
		dd, pc = u.stepThink(sc, pc)
		d += dd
	}
	return d
}

// stepThink is the think of the step at pc taken whole (a control step
// with all it governs) and where the next step starts.
func (u *User) stepThink(sc *Scenario, pc int) (time.Duration, int) {
	st := sc.Steps[pc]
	switch st.Kind {
	case plan.StepThink:
		return u.thinkTime(st), pc + 1
	case plan.StepIf:
		end := st.Flow.Jump
		if g := sc.Steps[end-1]; g.Kind == plan.StepGoto && g.Flow.Jump > end {
			// With an else: then is [pc+1, the goto), else [end, its
			// target).
			return max(u.regionThink(sc, pc+1, end-1), u.regionThink(sc, end, g.Flow.Jump)), g.Flow.Jump
		}
		return u.regionThink(sc, pc+1, end), end
	case plan.StepLoop:
		// StepLoop, StepNext, body, StepGoto back; Jump is past it.
		end := st.Flow.Jump
		body := u.regionThink(sc, pc+2, end-1)
		return time.Duration(max(st.Flow.Count, 1)) * body, end
	case plan.StepChoose:
		fl := st.Flow
		var sum float64
		prev := 0
		for i, b := range fl.Branches {
			w := fl.Weights[i] - prev
			prev = fl.Weights[i]
			sum += float64(w) * float64(u.regionThink(sc, b, closing(sc, b)))
		}
		return time.Duration(sum / float64(prev)), skip(sc, pc)
	case plan.StepGoto:
		return 0, max(st.Flow.Jump, pc+1)
	}
	return 0, pc + 1
}

func (u *User) thinkTime(st *Step) time.Duration {
	if st.Dist != nil {
		return st.Dist.Draw(u.rng)
	}
	d := st.ThinkMin
	if st.ThinkMax > st.ThinkMin {
		d += time.Duration(u.rng.Int64N(int64(st.ThinkMax-st.ThinkMin) + 1))
	}
	return d
}

// Think waits d unless the user is stopped or retired first.
func (u *User) Think(d time.Duration, stop Stop) bool {
	if d <= 0 {
		return true
	}
	if u.timer == nil {
		u.timer = time.NewTimer(d)
	} else {
		u.timer.Reset(d)
	}
	select {
	case <-u.timer.C:
		return true
	case <-stop.Soft:
		return false
	case <-stop.Retire:
		return false
	}
}

// do sends one request step and records it. from is when its latency
// starts when the iteration was scheduled (zero: at send); sent is a clock
// reading taken just before, when the caller has one (zero: read it now).
func (u *User) do(st *Step, from, sent time.Time) bool {
	if err := u.build(st); err != nil {
		u.shard.FailUnsent(st.ID, sample.Other, err.Error())
		return false
	}
	if sent.IsZero() {
		sent = time.Now()
	}
	u.req.Sent = sent
	u.env.Status = 0 // what expressions see when no answer comes
	u.inFlight.Add(1)
	err := u.tr.RoundTrip(&u.req, &u.resp)
	u.inFlight.Add(-1)
	if err == nil && isRedirect(&u.resp) {
		return u.redirected(st, from, sent) // redirect.go
	}
	return u.finish(st, err, sent, u.latency(from, sent))
}

// latency is the request's just answered (or failed): from from, when it
// was scheduled (open model, pace), with everything it waited for; else
// from its send at sent, less the TLS handshake of a connection opened
// for it, a phase of its own (the run's tls block), as k6 and wrk leave
// it out of a request's duration.
func (u *User) latency(from, sent time.Time) time.Duration {
	if !from.IsZero() {
		return time.Since(from)
	}
	return max(time.Since(sent)-u.resp.Handshake, 0)
}

// finish judges and records the outcome of a request step sent at sent:
// err is the transport's, else u.resp holds the answer. The event-loop
// engine (evloop.go) records through it too, so both engines count alike.
func (u *User) finish(st *Step, err error, sent time.Time, latency time.Duration) bool {
	if err != nil {
		class := httpc.Classify(err)
		if u.interrupted.Load() {
			u.shard.RecordUnfinished(st.ID, sample.Interrupted)
			return false
		}
		u.failed(st, class, nil, err, sent, latency) // failures.go
		return false
	}
	if u.jar != nil || u.resp.Get("Set-Cookie") != nil {
		u.storeCookies(st)
	}
	u.env.Status = u.resp.Status
	if u.renewOn != nil && renews(u.renewOn, u.resp.Status) {
		// Counted as the answer it is, not a failure: the plan said what
		// to do about it (renew_on), and the renewal is counted apart.
		u.renewHit = true
		u.shard.RecordResponse(st.ID, sample.OK, u.resp.Status, latency)
		return false
	}
	class, msg := u.judge(st)
	if class != sample.OK {
		u.failed(st, class, msg, nil, sent, latency) // failures.go
		return false
	}
	u.shard.RecordResponse(st.ID, class, u.resp.Status, latency)
	return true
}

// SetSeed seeds the phase's user with the run's seed, so a plan's seed:
// reproduces the setup's and teardown's draws ({{ uuid }}, choice) too.
// The teardown draws from a stream of its own: the setup's user and it
// are both user 0, and a teardown sending the setup's uuids again (an id,
// an idempotency key) would find what the setup made instead of making
// its own.
func (ph *Phase) SetSeed(seed uint64, teardown bool) {
	ph.prog.Seed = seed
	ph.stream = 0
	if teardown {
		ph.stream = teardownStream
	}
}

// teardownStream is the teardown's generator stream, beyond every user
// number.
const teardownStream = 1 << 63
