//go:build linux

package evloop

import (
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/epoll"
	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/vu"
)

// Available says the engine can run here.
const Available = true

// Engine is the loops of one run.
type Engine struct {
	cfg    Config
	scens  map[*vu.Scenario]*scenario
	raddr  *net.TCPAddr
	sa     unix.Sockaddr
	family int
	loops  []*loop
	next   atomic.Uint64
	// minTimeout bounds how late a deadline sweep may come (sweep).
	minTimeout time.Duration
	base       time.Time
	// https: the users speak HTTP/1.1 over TLS (tls_linux.go).
	https bool
}

// New prepares the loops of a run whose program the engine can run
// (vu.Program.LoopIneligible is ""), and starts them.
func New(cfg Config) (*Engine, error) {
	e, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	e.Launch()
	return e, nil
}

// Prepare makes the loops of a run, as New, without starting them: an
// open model's loops open their first connections (OpenLoop.Preopen)
// before it returns. The run starts its schedule's clock after Prepare
// and then calls Launch, so that no arrival waits for the pre-opening:
// done on the clock, it made the first arrivals late by all its dials
// (30 to 40 ms for 1,000 connections), which at 20,000/s put a thousand
// arrivals behind at once and set off more dials to catch up.
func Prepare(cfg Config) (*Engine, error) {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.Open != nil {
		// A loop for each share of the schedule (Open.Loops).
		cfg.Loops = len(cfg.Open.Loops)
	}
	e := &Engine{cfg: cfg, scens: map[*vu.Scenario]*scenario{}, base: time.Now()}
	addr, err := e.render()
	if err != nil {
		return nil, err
	}
	if e.https && cfg.Shared == nil {
		return nil, fmt.Errorf("evloop: an https program needs the run's Shared")
	}
	if err := e.resolve(addr); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Loops; i++ {
		l, err := newLoop(e, i)
		if err != nil {
			for _, l := range e.loops {
				l.closeFDs()
			}
			return nil, err
		}
		e.loops = append(e.loops, l)
	}
	e.openAhead()
	return e, nil
}

// Discard closes what Prepare opened, for an engine never launched.
func (e *Engine) Discard() {
	for _, l := range e.loops {
		for _, c := range l.conns {
			if c != nil {
				l.closeConn(c)
			}
		}
		l.closeFDs()
	}
}

// Launch starts the loops Prepare made.
func (e *Engine) Launch() {
	for _, l := range e.loops {
		e.cfg.Hold()
		go l.run()
	}
	go func() {
		<-e.cfg.Soft
		for _, l := range e.loops {
			l.wake()
		}
	}()
}

// render renders every request step's bytes, once for every user, and
// returns the address they go to.
func (e *Engine) render() (addr string, err error) {
	for _, sc := range e.cfg.Prog.Scenarios {
		if sc.Connection != nil {
			continue
		}
		s := &scenario{}
		for _, st := range sc.LoopSteps() {
			sr := stepReq{st: st, timeout: st.Timeout}
			if sr.bytes, err = e.cfg.Prog.LoopRequest(st, &sr.req, e.cfg.Rec); err != nil {
				return "", err
			}
			addr = sr.req.Endpoint.Addr
			e.https = sr.req.Endpoint.Scheme == "https"
			if e.minTimeout == 0 || st.Timeout < e.minTimeout {
				e.minTimeout = st.Timeout
			}
			s.steps = append(s.steps, sr)
		}
		e.scens[sc] = s
	}
	if addr == "" {
		return "", fmt.Errorf("evloop: no request step")
	}
	return addr, nil
}

// resolve resolves addr once, for every dial of the run.
func (e *Engine) resolve(addr string) error {
	ra, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return fmt.Errorf("evloop: %w", err)
	}
	e.raddr = ra
	if ip4 := ra.IP.To4(); ip4 != nil {
		sa := &unix.SockaddrInet4{Port: ra.Port}
		copy(sa.Addr[:], ip4)
		e.sa, e.family = sa, unix.AF_INET
	} else {
		sa := &unix.SockaddrInet6{Port: ra.Port}
		copy(sa.Addr[:], ra.IP.To16())
		e.sa, e.family = sa, unix.AF_INET6
	}
	return nil
}

// NewTransport returns the transport of a new user and so its loop:
// users are spread over the loops in turn.
func (e *Engine) NewTransport() *Transport {
	return e.transportOn(e.loops[(e.next.Add(1)-1)%uint64(len(e.loops))])
}

// transportOn is a new user's transport on l.
func (e *Engine) transportOn(l *loop) *Transport {
	tr := &Transport{l: l}
	if e.https {
		tr.tls = e.cfg.Shared.NewLoopTLS()
	}
	return tr
}

// Start runs u on its transport's loop, iteration after iteration, until
// the run's soft stop, retire or an interrupt. It counts as held (Hold)
// until it leaves.
func (e *Engine) Start(u *vu.User, tr *Transport, sc *vu.Scenario, retire <-chan struct{}) {
	e.cfg.Hold()
	l := tr.l
	c := &conn{fd: -1, u: u, sc: e.scens[sc], retire: retire, resp: u.LoopResponse(), tl: tr.tls}
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		e.cfg.Left()
		e.cfg.Release()
		return
	}
	l.inbox = append(l.inbox, c)
	l.pending.Store(true)
	l.wakeLocked()
	l.mu.Unlock()
}

// Interrupt implements httpc.Transport: the user's request in flight is
// cut off (counted as interrupted) by its loop.
func (t *Transport) Interrupt() {
	if t.tls != nil {
		// A handshake in flight is the dialing goroutine's to cut.
		t.tls.Interrupt()
	}
	t.l.interrupt.Store(true)
	t.l.wake()
}

const (
	stConnecting uint8 = iota + 1
	stWriting
	stReading
	// stHandshaking: a goroutine dials and runs the TLS handshake
	// (tls_linux.go); its deadline and Interrupt are its own.
	stHandshaking
)

// conn is one user and its connection.
type conn struct {
	fd     int
	slot   int32
	gen    int32
	state  uint8 // 0: no request in flight
	reused bool
	u      *vu.User
	sc     *scenario
	retire <-chan struct{}
	resp   *httpc.Response
	pc     int
	// goOn says the finished step's iteration goes on to the next step.
	goOn bool
	// again: the socket may hold more than its last turn read (l.again).
	again bool
	// stream parses an answer that did not come in one read; out is
	// what is left to write of a request the socket did not take at once.
	stream *httpc.Stream
	out    []byte
	custom []byte // this user's own request bytes (cookies), if any
	sent   time.Time
	// from is when the current step's latency counts from, when not its
	// send: an arrival's first request counts from when it was due.
	from time.Time
	// handshake is the TLS handshake of the connection opened for the
	// current step, which a latency from the send leaves out, as the
	// goroutine engine's (httpc.Response.Handshake).
	handshake time.Duration
	// deadline is the request's, in ns since the engine's base (0: none).
	deadline int64
	// tl dials an https user's connections, and tc is the one open (fd
	// is its socket); exchanging says the request went to tc, so its end
	// is judged as the goroutine engine judges an exchange over TLS.
	tl         *httpc.LoopTLS
	tc         *httpc.LoopConn
	exchanging bool
}

type loop struct {
	e   *Engine
	set *epoll.Set
	sa  unix.Sockaddr

	mu      sync.Mutex
	inbox   []*conn
	exited  bool
	pending atomic.Bool
	// interrupt says Interrupt was called for some user of this loop.
	interrupt atomic.Bool

	conns  []*conn // by slot
	free   []int32
	users  int
	events [128]epoll.Event
	rbuf   []byte
	// pbuf holds the plaintext of what one read brought over TLS.
	pbuf   []byte
	parser *httpc.Parser
	// dialed are the TLS dials finished since the loop last looked (mu).
	dialed []tlsDialed
	// inflight is the loop's part of the run's gauge not yet published.
	inflight int64
	// busy is the number of requests in flight.
	busy int
	// runq holds users whose request finished, to go on from the main
	// loop: going on at once from a failure that came at once (a refused
	// connection) would recurse without bound.
	runq []*conn
	// again holds sockets whose reading was cut short to let the others
	// have their turn; the next wait does not block while there are any.
	again, again2 []*conn
	// nextSweep is when deadlines are next looked at (ns since base).
	nextSweep int64
	gen       int32
	// fatal is the failure of the loop's own epoll set (fail): the loop
	// ends its users' requests with it and leaves.
	fatal error

	// The open model's (Config.Open): timer is set to the next arrival's
	// time, tick says it fired, idle holds the
	// slots whose connection waits for an arrival, last in first out, as
	// the goroutine model's idle stack.
	open  *Open
	arr   Arrivals
	max   int
	timer *epoll.Timer
	tick  bool
	idle  []*conn
	// answersLeft says the last wait returned as many events as it had
	// room for, and answers among them freed slots: more answers may be
	// ready, each freeing a slot. freed counts the slots answers freed.
	answersLeft bool
	freed       uint64

	// preopen is how many slots connect before the first arrival
	// (OpenLoop.Preopen); none once they have.
	preopen int
}

func newLoop(e *Engine, i int) (*loop, error) {
	set, err := epoll.New()
	if err != nil {
		return nil, fmt.Errorf("evloop: %w", err)
	}
	// Each loop has its own copy of the address: Connect writes into it.
	var sa unix.Sockaddr
	switch a := e.sa.(type) {
	case *unix.SockaddrInet4:
		c := *a
		sa = &c
	case *unix.SockaddrInet6:
		c := *a
		sa = &c
	}
	l := &loop{e: e, set: set, sa: sa, rbuf: make([]byte, 64<<10), parser: httpc.NewParser()}
	if e.cfg.Open != nil {
		// epoll_wait's own timeout is in milliseconds; arrivals 50 µs
		// apart need the timerfd's nanoseconds.
		if l.timer, err = epoll.NewTimer(); err != nil {
			l.closeFDs()
			return nil, fmt.Errorf("evloop: %w", err)
		}
		if err := set.Add(l.timer.FD(), &epoll.Event{Events: epoll.In | epoll.Edge, Fd: fdTimer}); err != nil {
			l.closeFDs()
			return nil, fmt.Errorf("evloop: %w", err)
		}
		l.open = e.cfg.Open
		l.arr, l.max = e.cfg.Open.Loops[i].Arrivals, e.cfg.Open.Loops[i].Max
		l.preopen = min(e.cfg.Open.Loops[i].Preopen, l.max)
		// The first turn is the timer's, expired at once: its wait
		// reports it with whatever the pre-opened connections met since
		// they opened (a server that closes a connection that sent
		// nothing, in the time before a segment's start), so the first
		// arrivals do not go to connections already closed.
		l.arm(1)
	}
	return l, nil
}

// The epoll data of the loop's own files (a socket's is its slot, ≥ 0).
const (
	fdWake  = epoll.WakeKey
	fdTimer = -2
)

func (l *loop) closeFDs() {
	_ = l.set.Close()
	if l.timer != nil {
		unix.Close(l.timer.FD())
	}
}

// wake makes a loop blocked in epoll_wait look at its inbox and flags.
// The eventfd is closed when the loop ends, under mu, and its number may
// then be another file's: a wake after the end must not write.
func (l *loop) wake() {
	l.mu.Lock()
	l.wakeLocked()
	l.mu.Unlock()
}

func (l *loop) wakeLocked() {
	if !l.exited {
		// A wake that cannot be written finds the loop's set broken, a
		// failure its own wait meets and reports.
		_ = l.set.Wake()
	}
}

// softClosed says no new iteration may start: the run's soft stop, or
// the loop's own failure.
func (l *loop) softClosed() bool {
	if l.fatal != nil {
		return true
	}
	select {
	case <-l.e.cfg.Soft:
		return true
	default:
		return false
	}
}

func (l *loop) nowNS(t time.Time) int64 { return int64(t.Sub(l.e.base)) }

func (l *loop) run() {
	defer l.e.cfg.Release()
	for {
		if l.pending.Load() {
			l.takeInbox()
		}
		if l.interrupt.Swap(false) {
			l.cutOff()
		}
		if l.fatal != nil {
			l.endAll()
		}
		if l.open != nil {
			if l.softClosed() {
				l.closeIdle()
			} else if l.tick {
				l.arrive()
			}
		}
		l.drain()
		if l.users == 0 && l.softClosed() {
			l.mu.Lock()
			if len(l.inbox) == 0 {
				l.exited = true
				l.closeFDs()
				l.mu.Unlock()
				l.publish()
				return
			}
			l.mu.Unlock()
			continue
		}
		l.publish()
		if l.fatal != nil {
			// Only handshakes are left, on their goroutines, bounded by
			// their deadlines; they come back through the inbox.
			time.Sleep(time.Millisecond)
			continue
		}
		// One wait, through the runtime's system-call path. A look that
		// does not block first (epoll_wait with timeout 0, the answers to
		// the last batch often being in already) measured no better at
		// 64 users: it saves the system-call bookkeeping when it finds
		// events and costs a whole system call when it does not.
		n := l.wait()
		freed := l.freed
		l.dispatch(n)
		// A wait that filled its buffer, with events that ended
		// answers, may have left more answers unread; an arrival then
		// waits for them rather than dial (arrive). Events that only
		// brought parts of answers (slow bodies) say nothing of when
		// a slot frees, and leave the arrivals to dial.
		l.answersLeft = n == len(l.events) && l.freed != freed
	}
}

// dispatch handles the n events of a wait, the sockets left to read and
// the deadlines due, and lets the users whose step finished go on.
func (l *loop) dispatch(n int) {
	now := time.Now()
	for i := 0; i < n; i++ {
		ev := &l.events[i]
		switch ev.Fd {
		case fdWake:
			l.set.ClearWake()
			continue
		case fdTimer:
			// Edge-triggered: each expiry queues an event of its own,
			// read or not, so no read (a system call per arrival).
			l.tick = true
			continue
		}
		c := l.conns[ev.Fd]
		if c == nil || c.gen != ev.Pad || c.fd < 0 {
			continue // a socket closed earlier in this batch
		}
		l.ready(c, ev.Events, now)
	}
	if len(l.again) > 0 {
		l.readAgain(now)
	}
	if ns := l.nowNS(now); ns >= l.nextSweep {
		l.sweep(time.Now())
	}
	l.drain()
}

// wait waits for events until the nearest deadline (epoll.Set.Wait: the
// runtime knows the thread is in a system call). A failed wait fails the
// loop (fail).
func (l *loop) wait() int {
	ms := -1
	if len(l.again) > 0 || l.tick {
		ms = 0
	} else if l.busy > 0 {
		// The open model's timerfd wakes the loop for arrivals; its
		// deadlines are swept on this timeout as the closed model's.
		d := time.Duration(l.nextSweep - l.nowNS(time.Now()))
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
		if ms < 0 {
			ms = 0
		} else if ms > maxWaitMS {
			ms = maxWaitMS
		}
	}
	n, err := l.set.Wait(l.events[:], ms)
	if err != nil {
		l.fail(err)
		return 0
	}
	return n
}

// maxWaitMS bounds one wait: epoll_wait's timeout is a C int of
// milliseconds, which a step timeout over 24.8 days would overflow into a
// negative (endless) wait; a wait cut short just sweeps and waits again.
const maxWaitMS = 1 << 30

// arm sets the timer to expire in d ns.
func (l *loop) arm(d int64) {
	if err := l.timer.Set(d); err != nil {
		l.tick = true // look again next turn rather than never
	}
}

// publish adds the loop's change of in-flight requests to the run's gauge:
// once per wake-up rather than twice per request on a shared counter.
func (l *loop) publish() {
	if l.inflight != 0 {
		l.e.cfg.InFlight.Add(l.inflight)
		l.inflight = 0
	}
}

func (l *loop) takeInbox() {
	l.mu.Lock()
	in, dialed := l.inbox, l.dialed
	l.inbox, l.dialed = nil, nil
	l.pending.Store(false)
	l.mu.Unlock()
	for _, c := range in {
		l.add(c)
		l.iterate(c)
	}
	for _, d := range dialed {
		l.handshook(d)
	}
}

// add gives a new user its slot.
func (l *loop) add(c *conn) {
	if n := len(l.free); n > 0 {
		c.slot = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		c.slot = int32(len(l.conns))
		l.conns = append(l.conns, nil)
	}
	l.conns[c.slot] = c
	l.users++
}

// iterate starts the user's next iteration, or lets it leave: at the
// run's stop, its retirement or an interrupt, as closedLoop does.
func (l *loop) iterate(c *conn) {
	if c.u.Interrupted() || l.softClosed() {
		l.leave(c)
		return
	}
	select {
	case <-c.retire:
		l.leave(c)
		return
	default:
	}
	c.u.LoopBegin()
	c.pc = 0
	l.send(c)
}

func (l *loop) leave(c *conn) {
	// The run's in-flight gauge drops before its active one, as each
	// goroutine user's does: a sample never shows more requests on the
	// wire than users.
	l.publish()
	l.closeConn(c)
	l.conns[c.slot] = nil
	l.free = append(l.free, c.slot)
	l.users--
	l.e.cfg.Left()
	l.e.cfg.Release()
}
