package run

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/sched"
)

// Connection populations: each WebSocket or SignalR scenario holds a
// number of connections (users: N, or per_tenant: K times the tenant pool)
// scaled by the load profile's shape, target(t) / peak, so a ramp of users
// ramps the connections too and a profile that ends at zero closes them.
//
// One controller goroutine owns every slot. A held connection costs no
// goroutine of ours (the client's read loop is its only one): goroutines
// exist only while a slot connects, runs calls or steps, or closes, and
// hand the slot back on a channel. The controller notices lost
// connections by polling (every pollEvery), which is cheap next to a
// goroutine's stack per connection at 18,000 connections.

const (
	connControlEvery = 50 * time.Millisecond
	pollEvery        = 250 * time.Millisecond
	// closeParallel bounds the concurrent polite closes at the end of a
	// run, each of which may wait for the peer's close frame.
	closeParallel = 4096
)

type slotState uint8

const (
	slotIdle    slotState = iota // not connected; connect when wanted
	slotHolding                  // connected, holding until `until` (zero: the run's end)
	slotWaiting                  // waiting to reconnect until `until`
)

// slot is one connection of a population. Fields other than busy belong
// to whoever holds the slot: the controller, or the one goroutine it
// handed the slot to (busy); the channel hand-back orders the two.
type slot struct {
	idx    int // in the whole population, from 0 ({{ vu }} is idx+1)
	tenant int
	busy   bool
	state  slotState
	until  time.Time
	since  time.Time // when the connection opened, for "session"
	sr     *signalr.Conn
	wc     *ws.Conn
	pc     int // WebSocket: next step
	iter   int64
	env    *plan.Env
	tried  bool // an attempt has finished; the controller's, even while busy
}

type population struct {
	// plan notes the credentials a connection sends (headerOf).
	plan  *plan.Plan
	sc    *plan.Scenario
	kind  string
	spec  *plan.Connection
	total int // whole-test connections at the profile's peak
	slots []*slot
	rec   *connRecorder
	base  string

	// SignalR.
	sro *signalr.Options
	// WebSocket.
	wso  *ws.Options
	wsc  ws.Counters
	wsOp atomic.Int64 // open WebSocket connections
	disc [ws.NumReasons]atomic.Int64

	opened, failed atomic.Int64
	byClass        [sample.NumClasses]atomic.Int64
	peak           atomic.Int64 // WebSocket's peak open (SignalR's is in its Stats)
	// wsAtEnd counts WebSocket connections still open when the run ended
	// (SignalR's are in Stats.ClosedAtEnd). Each opened connection ends
	// exactly once, as a disconnect or open at the end, so opened =
	// open + open at the end + disconnects at any moment after the
	// counters settle, and opened = open at the end + disconnects once
	// the run is over.
	wsAtEnd atomic.Int64
}

func (p *population) openAtEnd() int64 {
	if p.sro != nil {
		return p.sro.Stats.ClosedAtEnd.Load()
	}
	return p.wsAtEnd.Load()
}

// peakOpen is the most connections open at once, counted at every open
// (a sample every control period missed those that opened and closed
// between two: 644 connections opened, a peak of 0).
func (p *population) peakOpen() int64 {
	if p.sro != nil {
		return p.sro.Stats.PeakOpen.Load()
	}
	return p.peak.Load()
}

// raisePeak makes peak at least n.
func raisePeak(peak *atomic.Int64, n int64) {
	for {
		old := peak.Load()
		if n <= old || peak.CompareAndSwap(old, n) {
			return
		}
	}
}

func (p *population) open() int64 {
	if p.sro != nil {
		return p.sro.Stats.Open.Load()
	}
	return p.wsOp.Load()
}

// connRunner runs every population of a run.
type connRunner struct {
	r      *runner
	rec    *metrics.Recorder
	pops   []*population
	ctx    context.Context
	cancel context.CancelFunc
	back   chan *handBack
	busy   int
	stopCh chan struct{}
	done   chan struct{}
	once   sync.Once
}

type handBack struct {
	p *population
	s *slot
}

// startConnections starts the populations of the plan's connection
// scenarios; nil when it has none. Call before the ticker starts.
func (r *runner) startConnections() {
	var scs []*plan.Scenario
	for _, sc := range r.plan.Scenarios {
		if sc.Connection.Spec() != nil {
			scs = append(scs, sc)
		}
	}
	if len(scs) == 0 {
		return
	}
	cr := &connRunner{r: r, back: make(chan *handBack, 1024), stopCh: make(chan struct{}), done: make(chan struct{})}
	cr.ctx, cr.cancel = context.WithCancel(context.Background())
	var infos []metrics.StepInfo
	ids := make([]map[string]int, len(scs))
	for i, sc := range scs {
		ids[i] = map[string]int{}
		for _, name := range connSteps(sc) {
			ids[i][name] = len(infos)
			infos = append(infos, metrics.StepInfo{Scenario: sc.Name, Name: name, Group: groupName[sc.Connection.Kind]})
		}
	}
	cr.rec = metrics.New(infos, r.opts.Interval.Seconds())
	cr.rec.Configure(metrics.ErrorOptions{Top: r.opts.Errors.Top, Redact: r.opts.Errors.Redact})
	seg := r.seg()
	for i, sc := range scs {
		p := &population{sc: sc, kind: sc.Connection.Kind, spec: sc.Connection.Spec(),
			total: sc.Connection.Count(r.plan.Tenants), base: r.base, plan: r.plan}
		p.rec = newConnRecorder(cr.rec, ids[i])
		for idx := 0; idx < p.total; idx++ {
			if idx%seg.Count != seg.Index {
				continue
			}
			s := &slot{idx: idx, tenant: tenantOfSlot(sc.Connection, idx, r.plan.Tenants)}
			s.env = &plan.Env{Tenant: s.tenant, VU: int64(idx + 1)}
			if r.opts.Carry != nil {
				// {{ vu }} is the device's slot, the same at every level;
				// {{ iter }} goes on, so the pair never repeats.
				r.opts.Carry.Counter(&s.iter)
			}
			if w := p.spec.WebSocket; w != nil && w.Captures > 0 {
				s.env.Captures = make([]string, w.Captures)
			}
			p.slots = append(p.slots, s)
		}
		p.setup(r.opts.TLS)
		cr.pops = append(cr.pops, p)
	}
	r.rec.TrackConnections = true
	r.conns = cr
	go cr.loop()
}

// groupName is the report group of a protocol's steps.
var groupName = map[string]string{plan.KindSignalR: "SignalR", plan.KindWebSocket: "WebSocket"}

// tenantOfSlot gives per_tenant populations K consecutive slots per
// tenant (a restaurant's devices come up together on a ramp) and spreads a
// fixed population over the pool.
func tenantOfSlot(c *plan.ConnectionSpec, idx, tenants int) int {
	if tenants <= 0 {
		return 0
	}
	if c.PerTenant > 0 {
		return idx/c.PerTenant%tenants + 1
	}
	return idx%tenants + 1
}

func (p *population) setup(tlsConf *tls.Config) {
	c := p.spec
	switch {
	case c.SignalR != nil:
		s := c.SignalR
		p.sro = &signalr.Options{
			AccessToken:       s.AccessToken,
			SkipNegotiate:     s.SkipNegotiate,
			Protocol:          signalr.ProtocolNamed(s.Protocol),
			Transport:         signalr.TransportNamed(s.Transport),
			NegotiateTimeout:  s.NegotiateTimeout,
			HandshakeTimeout:  s.HandshakeTimeout,
			KeepAlive:         s.KeepAlive,
			ServerTimeout:     s.ServerTimeout,
			TimestampPath:     s.Timestamp,
			StatefulReconnect: s.StatefulReconnect,
			Stats:             signalr.NewStats(s.Listen...),
			Recorder:          p.rec,
		}
		// The client clones the config for negotiate and again, offering
		// only http/1.1, for the upgrade: the run's config is shared with
		// the HTTP users' transport and must not be written to.
		p.sro.TLS = tlsConf
	case c.WebSocket != nil:
		w := c.WebSocket
		p.wso = &ws.Options{
			Subprotocols:   w.Subprotocols,
			TLS:            tlsConf,
			ConnectTimeout: w.ConnectTimeout,
			KeepAlive:      w.KeepAlive,
			IdleTimeout:    w.ServerTimeout,
			Counters:       &p.wsc,
		}
		// A wait that no send just before it armed (a server's hello, an
		// answer to a send further up) looks in a short backlog instead.
		for i, st := range w.Steps {
			if st.Kind == plan.WSWait && (i == 0 || w.Steps[i-1].Kind != plan.WSSend) {
				p.wso.Backlog = 8
			}
		}
	}
}

// stopConnections closes every connection (politely, in parallel) and
// waits for the populations to finish; a no-op without any.
func (r *runner) stopConnections() {
	if r.conns == nil {
		return
	}
	r.conns.once.Do(func() { close(r.conns.stopCh) })
	<-r.conns.done
}

func (cr *connRunner) loop() {
	defer close(cr.done)
	tick := time.NewTicker(connControlEvery)
	defer tick.Stop()
	var lastPoll time.Time
	for {
		select {
		case hb := <-cr.back:
			cr.returned(hb)
			continue
		case <-cr.stopCh:
			cr.shutdown()
			return
		case <-tick.C:
		}
		now := time.Now()
		poll := now.Sub(lastPoll) >= pollEvery
		if poll {
			lastPoll = now
		}
		cr.control(now, poll)
		cr.checkInPlace(now)
	}
}

func (cr *connRunner) returned(hb *handBack) {
	hb.s.busy = false
	hb.s.tried = true // every hand-back follows a connect, or comes after one
	cr.busy--
}

// fraction is the share of each population wanted at elapsed time el.
func (cr *connRunner) fraction(el time.Duration) float64 {
	st := cr.r.plan.Load.Stages
	peak := sched.MaxTarget(st)
	if peak <= 0 {
		return 1
	}
	return sched.TargetAt(st, el) / peak
}

func (cr *connRunner) stopping() bool {
	select {
	case <-cr.r.soft:
		return true
	default:
		return false
	}
}

func (cr *connRunner) control(now time.Time, poll bool) {
	frac := cr.fraction(now.Sub(cr.r.start))
	stopping := cr.stopping()
	var open int64
	for _, p := range cr.pops {
		want := int(math.Round(frac * float64(p.total)))
		for _, s := range p.slots {
			if s.busy {
				continue
			}
			wanted := s.idx < want
			switch s.state {
			case slotIdle:
				if wanted && !stopping {
					cr.spawn(p, s, p.connect)
				}
			case slotWaiting:
				if !wanted || stopping {
					s.state = slotIdle
				} else if !now.Before(s.until) {
					cr.spawn(p, s, p.connect)
				}
			case slotHolding:
				switch {
				case !wanted:
					// A ramp down: the newest slots close first.
					cr.spawn(p, s, p.closeSlot)
				case poll && p.lost(s, now):
				case !s.until.IsZero() && !now.Before(s.until) && !stopping:
					cr.spawn(p, s, p.holdOver)
				}
			}
		}
		open += p.open()
	}
	cr.r.rec.Connections.Store(open)
}

// spawn hands s to a goroutine running fn, which gets it back to us.
func (cr *connRunner) spawn(p *population, s *slot, fn func(ctx context.Context, s *slot)) {
	s.busy = true
	cr.busy++
	go func() {
		fn(cr.ctx, s)
		cr.back <- &handBack{p: p, s: s}
	}()
}

// lost checks a held connection; when it ended, the slot waits to
// reconnect and the session is recorded with the disconnect's class.
func (p *population) lost(s *slot, now time.Time) bool {
	var d *ws.Disconnect
	switch {
	case s.sr != nil:
		select {
		case <-s.sr.Done():
			d = s.sr.Disconnect()
		default:
			return false
		}
	case s.wc != nil:
		select {
		case <-s.wc.Done():
			d = s.wc.Disconnect()
		default:
			return false
		}
	default:
		return false
	}
	if s.wc != nil {
		p.wsEnded(d, false)
		p.rec.RecordWS(ws.OpSession, d.Class, now.Sub(s.since), d)
	} else {
		p.rec.Record(signalr.OpSession, d.Class, now.Sub(s.since), d)
	}
	p.drop(s)
	s.state, s.until = slotWaiting, now.Add(p.spec.Reconnect)
	return true
}

// wsEnded counts a WebSocket connection's end once: open at the end of
// the run (atEnd), or a disconnect by its reason.
func (p *population) wsEnded(d *ws.Disconnect, atEnd bool) {
	p.wsOp.Add(-1)
	switch {
	case atEnd:
		p.wsAtEnd.Add(1)
	case d != nil && d.Reason < ws.NumReasons:
		p.disc[d.Reason].Add(1)
	default:
		// Cannot happen (an ended connection has its reason); counted
		// anyway so the ledger still adds up.
		p.disc[ws.NetworkReset].Add(1)
	}
}

func (p *population) drop(s *slot) {
	s.sr, s.wc = nil, nil
	s.pc = 0
}

// failedAttempt counts a connection attempt that never opened.
func (p *population) failedAttempt(err error) {
	cl := connClass(err)
	p.failed.Add(1)
	p.byClass[cl].Add(1)
}

func connClass(err error) sample.Class {
	var se *signalr.Error
	if errors.As(err, &se) {
		return se.Class
	}
	return ws.Classify(err)
}

// ---- SignalR and WebSocket sessions ----

// url renders the slot's connection URL, joined to the target when it is
// a path.
func (p *population) url(t *plan.Template, s *slot) string {
	u := t.String(s.env)
	if strings.HasPrefix(u, "/") {
		return p.base + u
	}
	return u
}

func (p *population) headerOf(hs []plan.Header, env *plan.Env) http.Header {
	if len(hs) == 0 {
		return nil
	}
	h := make(http.Header, len(hs))
	for _, x := range hs {
		v := x.Value.String(env)
		if p.plan.IsSecretHeader(x.Name) {
			// Hidden before it is sent, as a request step's are (vu).
			p.plan.NoteSecretHeader(x.Name, v)
		}
		h.Add(x.Name, v)
	}
	return h
}

// connect opens the slot's connection and runs its calls or steps up to a
// hold. Runs on a goroutine of its own.
func (p *population) connect(ctx context.Context, s *slot) {
	s.env.Iter = s.iter
	s.iter++
	switch {
	case p.sro != nil:
		p.connectSignalR(ctx, s)
	default:
		p.connectWS(ctx, s)
	}
}

func (p *population) connectSignalR(ctx context.Context, s *slot) {
	spec := p.spec.SignalR
	c, err := signalr.Connect(ctx, p.url(spec.URL, s), p.headerOf(spec.Headers, s.env), p.sro)
	if err != nil {
		p.failedAttempt(err)
		p.retryLater(s)
		return
	}
	p.opened.Add(1)
	for _, call := range spec.Calls {
		if err := p.call(ctx, c, call, s.env); err != nil {
			// Recorded under the call's step; the connection is of no
			// use to the scenario without it, so start over. A call cut
			// short by the run's end leaves a connection open at the end.
			if ctx.Err() != nil {
				c.CloseAtEnd()
			} else {
				c.Close()
			}
			p.retryLater(s)
			return
		}
	}
	s.sr, s.since = c, time.Now()
	p.holding(s, spec.Hold)
}

func (p *population) call(ctx context.Context, c *signalr.Conn, call plan.HubCall, env *plan.Env) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(call.Args.Append(nil, env), &raw); err != nil {
		// The template renders valid JSON by construction; a bad one is
		// still counted rather than dropped, with no latency: nothing
		// was sent.
		p.rec.Unsent(callOp(call), sample.Other, err)
		return err
	}
	args := make([]any, len(raw))
	for i, a := range raw {
		args[i] = a
	}
	if call.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, call.Timeout)
		defer cancel()
	}
	var err error
	switch call.Mode {
	case plan.HubSend:
		err = c.Send(call.Method, args...)
	case plan.HubStream:
		_, err = c.Stream(ctx, call.Method, args, nil)
	default:
		_, err = c.Invoke(ctx, call.Method, args...)
	}
	return err
}

func (p *population) holding(s *slot, d time.Duration) {
	s.state, s.until = slotHolding, time.Time{}
	if d > 0 {
		s.until = time.Now().Add(d)
	}
}

func (p *population) retryLater(s *slot) {
	p.drop(s)
	s.state, s.until = slotWaiting, time.Now().Add(p.spec.Reconnect)
}

// holdOver runs when a hold ends: a SignalR connection closes (and the
// slot connects again); a WebSocket script goes on after its hold step.
func (p *population) holdOver(ctx context.Context, s *slot) {
	if s.wc != nil {
		p.runSteps(ctx, s)
		return
	}
	p.closeSlot(ctx, s)
}

// closeSlot ends a held connection politely (a ramp down): the session
// was a success.
func (p *population) closeSlot(_ context.Context, s *slot) { p.closeHeld(s, false) }

// closeHeld closes a held connection; atEnd: because the run ended, so
// it counts as open at the end rather than as a disconnect.
func (p *population) closeHeld(s *slot, atEnd bool) {
	switch {
	case s.sr != nil:
		if d := s.sr.Disconnect(); d != nil {
			// It ended on its own before we came to close it.
			p.rec.Record(signalr.OpSession, d.Class, time.Since(s.since), d)
		} else {
			p.rec.Record(signalr.OpSession, sample.OK, time.Since(s.since), nil)
			if atEnd {
				s.sr.CloseAtEnd()
			} else {
				s.sr.Close()
			}
		}
	case s.wc != nil:
		p.closeWS(s, 1000, "", atEnd)
	}
	p.drop(s)
	s.state = slotIdle
}

func (p *population) closeWS(s *slot, code int, reason string, atEnd bool) {
	if d := s.wc.Disconnect(); d != nil {
		// It ended on its own before we came to close it.
		p.rec.RecordWS(ws.OpSession, d.Class, time.Since(s.since), d)
		p.wsEnded(d, false)
		return
	}
	p.rec.RecordWS(ws.OpSession, sample.OK, time.Since(s.since), nil)
	s.wc.Close(code, reason)
	p.wsEnded(s.wc.Disconnect(), atEnd)
}

func (p *population) connectWS(ctx context.Context, s *slot) {
	spec := p.spec.WebSocket
	c, err := ws.Dial(ctx, p.url(spec.URL, s), p.headerOf(spec.Headers, s.env), p.wso, nil)
	if err != nil {
		p.failedAttempt(err)
		p.rec.RecordWS(ws.OpUpgrade, ws.Classify(err), 0, err)
		p.retryLater(s)
		return
	}
	p.opened.Add(1)
	raisePeak(&p.peak, p.wsOp.Add(1))
	p.rec.RecordWS(ws.OpUpgrade, sample.OK, c.Timing.Upgrade, nil)
	s.wc, s.since, s.pc = c, time.Now(), 0
	for i := range s.env.Captures {
		s.env.Captures[i] = ""
	}
	p.runSteps(ctx, s)
}

// runSteps runs the script from s.pc until a hold (the slot is handed back
// holding), the end of the script or a close (the slot connects again at
// once), or a failure (the slot reconnects after the reconnect delay).
func (p *population) runSteps(ctx context.Context, s *slot) {
	steps := p.spec.WebSocket.Steps
	var armed *ws.Waiter
	for s.pc < len(steps) {
		st := &steps[s.pc]
		s.pc++
		switch st.Kind {
		case plan.WSHold:
			p.holding(s, st.Hold)
			return
		case plan.WSClose:
			p.closeWS(s, st.Code, st.Reason, false)
			p.drop(s)
			s.state = slotIdle
			return
		case plan.WSSend:
			if s.pc < len(steps) && steps[s.pc].Kind == plan.WSWait {
				// Arm the wait before sending, so a quick answer cannot
				// slip past unseen.
				armed = s.wc.Expect(matcher(&steps[s.pc]))
			}
			typ := ws.Text
			if st.Binary {
				typ = ws.Binary
			}
			t0 := time.Now()
			err := s.wc.Send(typ, st.Body.Append(nil, s.env))
			p.rec.RecordWS(ws.StepOp(st.Name), ws.Classify(err), time.Since(t0), err)
			if err != nil {
				p.failStep(s, false)
				return
			}
		case plan.WSWait:
			w := armed
			armed = nil
			if w == nil {
				w = s.wc.Expect(matcher(st))
			}
			wctx, cancel := context.WithTimeout(ctx, st.Timeout)
			t0 := time.Now()
			msg, err := w.Wait(wctx)
			cancel()
			d := time.Since(t0)
			if err == nil {
				err = capture(st, msg, s.env)
			}
			cl := ws.Classify(err)
			var ce *captureError
			if errors.As(err, &ce) {
				cl = sample.Capture
			}
			if err != nil && ctx.Err() != nil {
				cl = sample.Interrupted
			}
			p.rec.RecordWS(ws.StepOp(st.Name), cl, d, err)
			if err != nil {
				p.failStep(s, ctx.Err() != nil)
				return
			}
		}
	}
	// The script ran out: close, and start it again.
	p.closeWS(s, 1000, "", false)
	p.drop(s)
	s.state = slotIdle
}

// failStep ends the connection after a failed step (the step has the
// failure; the session is not counted again). atEnd: the step failed
// because the run ended, so a connection still open is open at the end.
func (p *population) failStep(s *slot, atEnd bool) {
	open := s.wc.Disconnect() == nil
	if open {
		s.wc.Close(1000, "")
	}
	p.wsEnded(s.wc.Disconnect(), atEnd && open)
	p.retryLater(s)
}

func matcher(st *plan.WSStep) ws.Matcher {
	return ws.Matcher{Path: st.Path, Equals: st.Equals, Regex: st.Regex}
}

type captureError struct{ name string }

func (e *captureError) Error() string {
	// Worded as an HTTP step's capture failure (vu.judge), so one plan's
	// failures read alike whichever protocol they came over.
	return "capture " + strconv.Quote(e.name) + " found nothing in the message"
}

func capture(st *plan.WSStep, msg []byte, env *plan.Env) error {
	for _, c := range st.Captures {
		var v string
		ok := false
		switch c.Kind {
		case plan.CaptureJSON:
			v, ok = ws.JSONAt(msg, c.JSONPath)
		case plan.CaptureRegex:
			v, ok = regexValue(c.Regex, msg)
		}
		if !ok {
			return &captureError{name: c.Name}
		}
		if c.Slot < len(env.Captures) {
			env.Captures[c.Slot] = v
		}
	}
	return nil
}

func regexValue(re *regexp.Regexp, b []byte) (string, bool) {
	m := re.FindSubmatch(b)
	if m == nil {
		return "", false
	}
	if len(m) > 1 {
		return string(m[1]), true
	}
	return string(m[0]), true
}

// shutdown ends the populations. A connect, call or script step in flight
// when the run ends gets what is left of the grace period, as an HTTP
// request does: cancelling it at once would count the run's own end as a
// failure of the server. Held connections need no grace and are closed
// first; what is still in flight when the grace runs out is cut off
// (interrupted), and any connection it leaves held is closed last.
func (cr *connRunner) shutdown() {
	cr.closeAllHeld()
	cr.settle(cr.graceEnd())
	cr.cancel()
	for cr.busy > 0 {
		cr.returned(<-cr.back)
	}
	cr.closeAllHeld()
	for _, p := range cr.pops {
		if p.sro != nil {
			p.sro.CloseIdleConnections()
		}
	}
	cr.r.rec.Connections.Store(0)
}

// graceEnd is when work in flight at the run's end must be cut off: the
// plan's grace after new work stopped, the same deadline as the HTTP
// users'.
func (cr *connRunner) graceEnd() time.Time {
	r := cr.r
	r.stopMu.Lock()
	at := r.stopped
	r.stopMu.Unlock()
	if at.IsZero() {
		at = time.Now()
	}
	return at.Add(r.plan.Load.Grace)
}

// settle takes the slots handed back until none is busy or the deadline
// passes. Nothing new is spawned: the run has stopped, so a connection
// handed back held is done and closes at once, not when the last one
// still in flight is.
func (cr *connRunner) settle(deadline time.Time) {
	if cr.busy == 0 {
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	sem := make(chan struct{}, closeParallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for cr.busy > 0 {
		select {
		case hb := <-cr.back:
			cr.returned(hb)
			p, s := hb.p, hb.s
			if s.state != slotHolding || p.lost(s, time.Now()) {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.closeHeld(s, true)
				<-sem
			}()
		case <-t.C:
			return
		}
	}
}

// closeAllHeld closes every held connection that no goroutine holds,
// politely and in parallel, as open at the end.
func (cr *connRunner) closeAllHeld() {
	sem := make(chan struct{}, closeParallel)
	var wg sync.WaitGroup
	for _, p := range cr.pops {
		for _, s := range p.slots {
			if s.busy || s.state != slotHolding {
				continue
			}
			if p.lost(s, time.Now()) {
				continue
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.closeHeld(s, true)
				<-sem
			}()
		}
	}
	wg.Wait()
}

// ---- result ----

// connectionsInto adds the populations' steps, error samples and summary
// to a result; safe while the run goes on (checkpoints).
func (r *runner) connectionsInto(res *result.Result) {
	cr := r.conns
	if cr == nil {
		return
	}
	snap := cr.rec.Snapshot()
	res.Steps = append(res.Steps, snap.Steps...)
	res.Samples = append(res.Samples, snap.Errors...)
	out := &result.Connections{}
	for _, p := range cr.pops {
		cs := result.ConnScenario{
			Scenario: p.sc.Name, Protocol: p.kind, Target: len(p.slots),
			Opened: p.opened.Load(), Failed: p.failed.Load(),
			ByClass: map[string]int64{}, PeakOpen: p.peakOpen(), OpenAtEnd: p.openAtEnd(),
			Disconnects: map[string]int64{},
		}
		// An attempt still connecting is neither opened nor failed yet:
		// only finished ones count, so opened + failed = attempts.
		cs.Attempts = cs.Opened + cs.Failed
		for c := range p.byClass {
			if n := p.byClass[c].Load(); n > 0 {
				cs.ByClass[sample.Class(c).String()] = n
			}
		}
		var counters *ws.Counters
		var disc *[ws.NumReasons]atomic.Int64
		if p.sro != nil {
			st := p.sro.Stats
			counters, disc = &st.Counters, &st.Disconnects
			cs.Pushes = map[string]int64{}
			for _, t := range p.spec.SignalR.Listen {
				cs.Pushes[t] = st.Pushes(t)
			}
			cs.OtherPushes = st.OtherPushes.Load()
			cs.HubProtocol = p.sro.Protocol.String()
			cs.Transports = st.ByTransport()
			cs.Fallbacks = st.Fallbacks.Load()
			cs.Reconnects, cs.ReconnectFailures = st.Reconnects.Load(), st.ReconnectFailures.Load()
			cs.Recovered, cs.Duplicates, cs.Lost = st.Recovered.Load(), st.Duplicates.Load(), st.Lost.Load()
			cs.TokenRenewals = st.TokenRenewals.Load()
		} else {
			counters, disc = &p.wsc, &p.disc
		}
		for i := range disc {
			if n := disc[i].Load(); n > 0 {
				cs.Disconnects[ws.Reason(i).String()] = n
			}
		}
		cs.MessagesIn, cs.MessagesOut = counters.MsgsIn.Load(), counters.MsgsOut.Load()
		cs.BytesIn, cs.BytesOut = counters.BytesIn.Load(), counters.BytesOut.Load()
		out.Scenarios = append(out.Scenarios, cs)
	}
	res.Connections = out
}

// runIdle waits out the stages of a plan whose scenarios all hold
// connections: there are no HTTP users to start.
func (r *runner) runIdle() {
	r.sleepUntil(r.start.Add(r.plan.Load.Duration()))
}
