package run

import (
	"context"
	"crypto/tls"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
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
	slotGaveUp                   // its attempts in a row are spent: no more for this run
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
	// fails counts the failed attempts in a row, for the backoff and the
	// plan's bound on attempts; hub is the slot's hub URL (urls).
	fails uint16
	hub   uint16
}

type population struct {
	// user is what each connection does once the driver opens it: its
	// handshake, hub calls, script, captures and failures.
	user  *vu.ConnUser
	sc    *plan.Scenario
	kind  string
	spec  *plan.Connection
	total int // whole-test connections at the profile's peak
	slots []*slot
	rec   *connRecorder

	// SignalR: sro is the first hub's options, hubs every hub's.
	sro  *signalr.Options
	hubs []*hubPop
	// WebSocket.
	wso  *ws.Options
	wsc  ws.Counters
	wsOp atomic.Int64 // open WebSocket connections
	disc [ws.NumReasons]atomic.Int64

	opened, failed atomic.Int64
	byClass        [sample.NumClasses]atomic.Int64
	// Retries: the draws' seed, slots that gave up, waits that a
	// Retry-After lengthened, and the per-second series.
	seed        uint64
	gaveUp      atomic.Int64
	retryAfters atomic.Int64
	retry       retrySeries
	peak        atomic.Int64 // WebSocket's peak open (SignalR's is in its Stats)
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
		return p.sumHubs(func(st *signalr.Stats) int64 { return st.ClosedAtEnd.Load() })
	}
	return p.wsAtEnd.Load()
}

// peakOpen is the most connections open at once, counted at every open
// (a sample every control period missed those that opened and closed
// between two: 644 connections opened, a peak of 0). Over several hubs
// it is the sum of their peaks: they follow one schedule and peak
// together, as the segments of a run do (merge adds theirs alike).
func (p *population) peakOpen() int64 {
	if p.sro != nil {
		return p.sumHubs(func(st *signalr.Stats) int64 { return st.PeakOpen.Load() })
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
		return p.sumHubs(func(st *signalr.Stats) int64 { return st.Open.Load() })
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
func startConnections(r *runner) *connRunner {
	var scs []*plan.Scenario
	for _, sc := range r.plan.Scenarios {
		if sc.Connection.Spec() != nil {
			scs = append(scs, sc)
		}
	}
	if len(scs) == 0 {
		return nil
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
			total: sc.Connection.Count(r.plan.Tenants), seed: r.prog.Seed}
		p.rec = newConnRecorder(cr.rec, ids[i])
		p.user = vu.NewConnUser(r.plan, r.base, p.spec, p.rec)
		for idx := 0; idx < p.total; idx++ {
			if idx%seg.Count != seg.Index {
				continue
			}
			s := &slot{idx: idx, tenant: tenantOfSlot(sc.Connection, idx, r.plan.Tenants)}
			s.hub = hubOfSlot(p.spec.SignalR, s.idx, s.tenant)
			s.env = r.prog.ConnectionEnv(i, int64(idx+1), s.tenant, connCaptures(p.spec))
			if r.opts.Carry != nil {
				// {{ vu }} is the device's slot, the same at every level;
				// {{ iter }} goes on, so the pair never repeats.
				r.opts.Carry.Counter(&s.iter)
			}
			p.slots = append(p.slots, s)
		}
		p.setup(r.opts.TLS)
		cr.pops = append(cr.pops, p)
	}
	r.rec.TrackConnections = true
	go cr.loop()
	return cr
}

// connCaptures is the number of capture slots a connection's script
// fills (SignalR calls capture nothing).
func connCaptures(spec *plan.Connection) int {
	if spec.WebSocket != nil {
		return spec.WebSocket.Captures
	}
	return 0
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
		p.setupHubs(tlsConf)
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

// stop closes every connection (politely, in parallel) and
// waits for the populations to finish; a no-op without any.
func (cr *connRunner) stop() {
	if cr == nil {
		return
	}
	cr.once.Do(func() { close(cr.stopCh) })
	<-cr.done
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

func (cr *connRunner) control(now time.Time, poll bool) {
	frac := cr.fraction(now.Sub(cr.r.start))
	stopping := cr.r.stopping()
	var open int64
	sec := int(now.Sub(cr.r.start) / time.Second)
	for _, p := range cr.pops {
		want := int(math.Round(frac * float64(p.total)))
		var started, waiting int64
		for _, s := range p.slots {
			if s.busy {
				continue
			}
			wanted := s.idx < want
			switch s.state {
			case slotIdle:
				if wanted && !stopping {
					started++
					cr.spawn(p, s, p.connect)
				}
			case slotWaiting:
				switch {
				case !wanted || stopping:
					s.state = slotIdle
				case !now.Before(s.until):
					waiting++
					started++
					cr.spawn(p, s, p.connect)
				default:
					waiting++
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
		p.retry.tick(sec, started, waiting)
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
	p.waitAfterLoss(s, now)
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
		for _, h := range p.hubs {
			h.sro.CloseIdleConnections()
		}
	}
	cr.r.rec.Connections.Store(0)
}

// graceEnd is when work in flight at the run's end must be cut off: the
// plan's grace after new work stopped, the same deadline as the HTTP
// users'.
func (cr *connRunner) graceEnd() time.Time {
	at, _, _ := cr.r.outcome()
	if at.IsZero() {
		at = time.Now()
	}
	return at.Add(cr.r.plan.Load.Grace)
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
