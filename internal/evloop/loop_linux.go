//go:build linux

package evloop

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
}

// New prepares the loops of a run whose program the engine can run
// (vu.Program.LoopIneligible is ""), and starts them.
func New(cfg Config) (*Engine, error) {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.Open != nil {
		// A loop for each share of the schedule (Open.Loops).
		cfg.Loops = len(cfg.Open.Loops)
	}
	e := &Engine{cfg: cfg, scens: map[*vu.Scenario]*scenario{}, base: time.Now()}
	var addr string
	for _, sc := range cfg.Prog.Scenarios {
		if sc.Connection != nil {
			continue
		}
		s := &scenario{}
		for _, st := range sc.LoopSteps() {
			sr := stepReq{st: st, timeout: st.Timeout}
			b, err := cfg.Prog.LoopRequest(st, &sr.req, cfg.Rec)
			if err != nil {
				return nil, err
			}
			sr.bytes = b
			addr = sr.req.Endpoint.Addr
			if e.minTimeout == 0 || st.Timeout < e.minTimeout {
				e.minTimeout = st.Timeout
			}
			s.steps = append(s.steps, sr)
		}
		e.scens[sc] = s
	}
	if addr == "" {
		return nil, fmt.Errorf("evloop: no request step")
	}
	ra, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("evloop: %w", err)
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
	for _, l := range e.loops {
		cfg.Hold()
		go l.run()
	}
	go func() {
		<-cfg.Soft
		for _, l := range e.loops {
			l.wake()
		}
	}()
	return e, nil
}

// NewTransport returns the transport of a new user and so its loop:
// users are spread over the loops in turn.
func (e *Engine) NewTransport() *Transport {
	return &Transport{l: e.loops[(e.next.Add(1)-1)%uint64(len(e.loops))]}
}

// Start runs u on its transport's loop, iteration after iteration, until
// the run's soft stop, retire or an interrupt. It counts as held (Hold)
// until it leaves.
func (e *Engine) Start(u *vu.User, tr *Transport, sc *vu.Scenario, retire <-chan struct{}) {
	e.cfg.Hold()
	l := tr.l
	c := &conn{fd: -1, u: u, sc: e.scens[sc], retire: retire, resp: u.LoopResponse()}
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
	t.l.interrupt.Store(true)
	t.l.wake()
}

const (
	stConnecting uint8 = iota + 1
	stWriting
	stReading
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
	// deadline is the request's, in ns since the engine's base (0: none).
	deadline int64
}

type loop struct {
	e    *Engine
	epfd int
	evfd int
	sa   unix.Sockaddr

	mu      sync.Mutex
	inbox   []*conn
	exited  bool
	pending atomic.Bool
	// interrupt says Interrupt was called for some user of this loop.
	interrupt atomic.Bool

	conns  []*conn // by slot
	free   []int32
	users  int
	events [128]unix.EpollEvent
	rbuf   []byte
	parser *httpc.Parser
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
	wakebuf   [8]byte
	gen       int32

	// The open model's (Config.Open): tfd is a timerfd set to the next
	// arrival's time, tick says it fired (or the loop just began), idle
	// holds the slots whose connection waits for an arrival, last in
	// first out, as the goroutine model's idle stack.
	open  *Open
	arr   Arrivals
	max   int
	tfd   int
	tick  bool
	idle  []*conn
	tspec unix.ItimerSpec
}

func newLoop(e *Engine, i int) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("evloop: epoll_create: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("evloop: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fdWake}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("evloop: epoll_ctl: %w", err)
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
	l := &loop{e: e, epfd: epfd, evfd: evfd, sa: sa, rbuf: make([]byte, 64<<10), parser: httpc.NewParser(), tfd: -1}
	if e.cfg.Open != nil {
		// epoll_wait's own timeout is in milliseconds; arrivals 50 µs
		// apart need the timerfd's nanoseconds.
		tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			l.closeFDs()
			return nil, fmt.Errorf("evloop: timerfd_create: %w", err)
		}
		l.tfd = tfd
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: fdTimer}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, tfd, &ev); err != nil {
			l.closeFDs()
			return nil, fmt.Errorf("evloop: epoll_ctl: %w", err)
		}
		l.open, l.tick = e.cfg.Open, true
		l.arr, l.max = e.cfg.Open.Loops[i].Arrivals, e.cfg.Open.Loops[i].Max
	}
	return l, nil
}

// The epoll data of the loop's own files (a socket's is its slot, ≥ 0).
const (
	fdWake  = -1
	fdTimer = -2
)

func (l *loop) closeFDs() {
	unix.Close(l.epfd)
	unix.Close(l.evfd)
	if l.tfd >= 0 {
		unix.Close(l.tfd)
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
		one := uint64(1)
		unix.Write(l.evfd, (*[8]byte)(unsafe.Pointer(&one))[:])
	}
}

func (l *loop) softClosed() bool {
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
		// One wait, through the runtime's system-call path. A look that
		// does not block first (epoll_wait with timeout 0, the answers to
		// the last batch often being in already) measured no better at
		// 64 users: it saves the system-call bookkeeping when it finds
		// events and costs a whole system call when it does not.
		n := l.wait()
		now := time.Now()
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			switch ev.Fd {
			case fdWake:
				unix.Read(l.evfd, l.wakebuf[:])
				continue
			case fdTimer:
				// Edge-triggered: each expiry queues an event of its
				// own, read or not, so no read (a system call per
				// arrival).
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
}

// wait waits for events until the nearest deadline; the runtime knows
// the thread is in a system call, so a garbage collection or another
// goroutine never waits for it.
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
	n, err := unix.EpollWait(l.epfd, l.events[:], ms)
	if err != nil {
		return 0 // EINTR
	}
	return n
}

// maxWaitMS bounds one wait: epoll_wait's timeout is a C int of
// milliseconds, which a step timeout over 24.8 days would overflow into a
// negative (endless) wait; a wait cut short just sweeps and waits again.
const maxWaitMS = 1 << 30

// arm sets the timerfd to expire in d ns.
func (l *loop) arm(d int64) {
	l.tspec.Value = unix.NsecToTimespec(d)
	if err := unix.TimerfdSettime(l.tfd, 0, &l.tspec, nil); err != nil {
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
	in := l.inbox
	l.inbox = nil
	l.pending.Store(false)
	l.mu.Unlock()
	for _, c := range in {
		l.add(c)
		l.iterate(c)
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

func (l *loop) closeConn(c *conn) {
	if c.fd >= 0 {
		// Closing removes it from the epoll set too.
		unix.Close(c.fd)
		c.fd = -1
	}
	c.reused = false
	c.again = false
	l.endStream(c)
}

// send starts the request of the user's current step: on its connection,
// or on a new one.
func (l *loop) send(c *conn) {
	if c.u.Interrupted() {
		// The grace ended while this user's last answer was handled:
		// nothing more goes on the wire, as a goroutine user's
		// RoundTrip after Interrupt sends nothing.
		c.state = stWriting
		l.inflight++
		l.busy++
		c.sent = time.Now()
		l.finish(c, httpc.ErrInterrupted, c.sent)
		return
	}
	sr := &c.sc.steps[c.pc]
	c.sent = time.Now()
	c.deadline = 0
	if sr.timeout > 0 {
		c.deadline = l.nowNS(c.sent) + int64(sr.timeout)
	}
	l.inflight++
	l.busy++
	out := sr.bytes
	if b, err := c.u.LoopCustom(sr.st, c.custom); err != nil {
		c.state = stWriting
		l.finish(c, err, c.sent)
		return
	} else if b != nil {
		c.custom, out = b, b
	}
	c.out = out
	if c.fd < 0 {
		l.dial(c)
		return
	}
	c.state = stWriting
	l.write(c)
}

func (l *loop) dial(c *conn) {
	c.state = stConnecting
	fd, err := unix.Socket(l.e.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		l.finish(c, l.opErr("dial", os.NewSyscallError("socket", err)), time.Now())
		return
	}
	// As net's own TCP connections: no Nagle delay for a request written
	// in two parts.
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	c.fd = fd
	// Numbered across the loop: a slot a user left may be another's,
	// and an event of the old socket must not reach it.
	l.gen++
	c.gen = l.gen
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.slot, Pad: c.gen}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.finish(c, l.opErr("dial", os.NewSyscallError("epoll_ctl", err)), time.Now())
		return
	}
	err = unix.Connect(fd, l.sa)
	switch err {
	case nil:
		l.connected(c)
	case unix.EINPROGRESS, unix.EINTR, unix.EALREADY:
		// Its end comes as EPOLLOUT (or an error).
	default:
		l.finish(c, l.opErr("dial", os.NewSyscallError("connect", err)), time.Now())
	}
}

// connected stops watching for writability, which only a request the
// socket does not take at once needs: one epoll_ctl per connection, none
// per request.
func (l *loop) connected(c *conn) {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.slot, Pad: c.gen}
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
	c.state = stWriting
	l.write(c)
}

func (l *loop) write(c *conn) {
	for len(c.out) > 0 {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[0])), uintptr(len(c.out)), unix.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			c.out = c.out[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.slot, Pad: c.gen}
			unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
			return
		default:
			l.finish(c, l.opErr("write", os.NewSyscallError("write", e)), time.Now())
			return
		}
	}
	c.out = nil
	if c.state == stWriting {
		c.state = stReading
	}
}

// ready handles a socket's events.
func (l *loop) ready(c *conn, events uint32, now time.Time) {
	switch c.state {
	case stConnecting:
		if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		errno, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil && errno != 0 {
			err = unix.Errno(errno)
		}
		if err != nil {
			l.finish(c, l.opErr("dial", os.NewSyscallError("connect", err)), now)
			return
		}
		l.connected(c)
	case stWriting:
		if events&unix.EPOLLOUT != 0 {
			l.write(c)
			if len(c.out) == 0 && c.fd >= 0 {
				ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: c.slot, Pad: c.gen}
				unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev)
			}
		}
		if c.state == stReading {
			// An answer may have come while the request was still being
			// written (a server that answers before reading a big body):
			// its edge was reported then, so look now.
			l.readable(c, events, now)
		}
	case stReading:
		l.readable(c, events, now)
	default:
		// Bytes or a close between requests are found by the next
		// answer's read, as after RoundTrip's look.
		if l.open != nil && c.fd >= 0 && c.reused && events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			// An idle slot waits for its next arrival for as long as
			// the schedule says; a server that closed it meanwhile (or
			// sent what nobody asked for) is found now, and the next
			// arrival dials, as RoundTrip's look before a reuse does.
			l.closeConn(c)
		}
	}
}

// maxReadsPerTurn bounds the reads of one socket per turn of the loop
// (64 KiB each).
const maxReadsPerTurn = 16

// readable reads what the socket holds (edge-triggered: until it is
// drained) and judges the answer. An answer that one read holds whole is
// parsed from the read buffer; one that is not goes to a Stream, which
// parses it as its bytes come, in bounded memory.
func (l *loop) readable(c *conn, events uint32, now time.Time) {
	for reads := 0; ; reads++ {
		if reads == maxReadsPerTurn {
			// A server that sends faster than this loop reads would keep
			// it here for good, past the deadlines and the end of the
			// run: the rest is read on the loop's next turn.
			if !c.again {
				c.again = true
				l.again = append(l.again, c)
			}
			return
		}
		n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&l.rbuf[0])), uintptr(len(l.rbuf)))
		var end error
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return
		case e != 0:
			end = l.opErr("read", os.NewSyscallError("read", e))
			n = 0
		case n == 0:
			end = io.EOF
		}
		data := l.rbuf[:n]
		sr := &c.sc.steps[c.pc]
		var closeAfter bool
		var err error
		if c.stream == nil {
			closeAfter, err = l.parser.Parse(data, end, &sr.req, c.resp, l.e.cfg.MaxHeader, l.e.cfg.MaxKept, c.reused)
			if err == httpc.ErrNeedMore {
				c.stream = httpc.NewStream(&sr.req, c.resp, l.e.cfg.MaxHeader, l.e.cfg.MaxKept, c.reused)
				closeAfter, err = c.stream.Feed(data, end)
			}
		} else {
			closeAfter, err = c.stream.Feed(data, end)
		}
		if err == httpc.ErrNeedMore {
			continue // until the socket is drained (EAGAIN)
		}
		l.endStream(c)
		// A close that came with the answer (EPOLLRDHUP) makes the
		// connection unusable, as RoundTrip's look after an answer finds.
		if err != nil || closeAfter || end != nil || events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			l.closeConn(c)
		} else {
			c.reused = true
		}
		// The answer's end is when this read completed it, not when the
		// batch of events began: one clock read per answer, as the
		// goroutine engine's.
		l.finish(c, err, time.Now())
		return
	}
}

// readAgain gives the sockets cut short last turn another turn.
func (l *loop) readAgain(now time.Time) {
	// Two lists in turn: a socket cut short again goes on the other.
	again := l.again
	l.again, l.again2 = l.again2[:0], again
	for i, c := range again {
		again[i] = nil
		if !c.again {
			continue // read to the end meanwhile, or gone
		}
		c.again = false
		if c.state == stReading && c.fd >= 0 {
			l.readable(c, 0, now)
		}
	}
}

func (l *loop) endStream(c *conn) {
	if c.stream != nil {
		c.stream.Close()
		c.stream = nil
	}
}

// finish records the current step's outcome and goes on: the next step,
// or the next iteration. Any error leaves the connection closed, as
// RoundTrip does.
func (l *loop) finish(c *conn, err error, now time.Time) {
	if err != nil {
		l.closeConn(c)
	}
	c.state = 0
	c.out = nil
	l.inflight--
	l.busy--
	sr := &c.sc.steps[c.pc]
	from := c.sent
	if !c.from.IsZero() {
		from, c.from = c.from, time.Time{}
	}
	c.goOn = c.u.LoopDone(sr.st, err, c.sent, now.Sub(from)) && c.pc+1 < len(c.sc.steps)
	l.runq = append(l.runq, c)
}

// drain lets the users whose step finished go on.
func (l *loop) drain() {
	for i := 0; i < len(l.runq); i++ {
		c := l.runq[i]
		l.runq[i] = nil
		if c.goOn {
			c.pc++
			l.send(c)
			continue
		}
		c.u.LoopEnd()
		if l.open != nil {
			l.arrived(c)
			continue
		}
		l.iterate(c)
	}
	l.runq = l.runq[:0]
}

func (l *loop) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Addr: l.e.raddr, Err: err}
}

// errTimeout is a request past its deadline, as net reports one.
func (l *loop) timeoutErr(c *conn) error {
	op := "read"
	if c.state == stConnecting {
		op = "dial"
	} else if c.state == stWriting {
		op = "write"
	}
	return l.opErr(op, os.ErrDeadlineExceeded)
}

// sweep fails the requests past their deadline and sets when to look
// next: at the nearest deadline, and no later than the shortest timeout
// from now, before which no request started later can be due.
func (l *loop) sweep(now time.Time) {
	ns := l.nowNS(now)
	next := ns + int64(l.e.minTimeout)
	if l.e.minTimeout <= 0 {
		next = ns + int64(time.Hour)
	}
	for _, c := range l.conns {
		if c == nil || c.state == 0 || c.deadline == 0 {
			continue
		}
		if c.deadline <= ns {
			l.finish(c, l.timeoutErr(c), now)
			continue
		}
		if c.deadline < next {
			next = c.deadline
		}
	}
	l.nextSweep = next
}

// cutOff ends the requests of interrupted users, as Interrupt ends a
// goroutine user's: counted as interrupted, and the user leaves.
func (l *loop) cutOff() {
	now := time.Now()
	for _, c := range l.conns {
		if c == nil || !c.u.Interrupted() {
			continue
		}
		if c.state != 0 {
			l.finish(c, httpc.ErrInterrupted, now)
		}
	}
}

// arrive starts every arrival that is due, each on an idle slot, a new
// one, or none (dropped), and sets the timer to the next.
func (l *loop) arrive() {
	l.tick = false
	for n := 0; ; {
		for ; ; n++ {
			if n == maxArrivalsPerTurn {
				// A rate the loop cannot keep up with must not keep it
				// from the answers that free its slots: the rest of the
				// batch comes next turn, after a look that does not
				// block.
				l.tick = true
				return
			}
			// Read afresh for each: an arrival the loop comes to more
			// than a second late is dropped in bulk (Take), as the
			// goroutine dispatcher's are.
			sc, due, ok := l.arr.Take(time.Now())
			if !ok {
				break
			}
			l.start(sc, due)
			// A slot whose iteration ended at once (a refused
			// connection) is free for the next arrival of the batch,
			// as a goroutine worker that finished is.
			l.drain()
		}
		due, ok := l.arr.Next()
		if !ok {
			return // the run's end closes Soft
		}
		if d := time.Until(due); d > 0 {
			l.arm(int64(d))
			return
		}
	}
}

// maxArrivalsPerTurn bounds the arrivals one turn of the loop starts.
const maxArrivalsPerTurn = 256

// start runs an arrival's iteration on a slot, as openWorker does.
func (l *loop) start(sc *vu.Scenario, due time.Time) {
	var c *conn
	if n := len(l.idle); n > 0 {
		c = l.idle[n-1]
		l.idle[n-1] = nil
		l.idle = l.idle[:n-1]
	} else if l.users < l.max {
		c = &conn{fd: -1}
		tr := &Transport{l: l}
		c.u = l.open.NewUser(tr)
		c.resp = c.u.LoopResponse()
		l.add(c)
	} else {
		l.arr.Drop(sc)
		return
	}
	c.sc = l.e.scens[sc]
	c.pc = 0
	c.from = due
	l.open.Active(1)
	c.u.LoopBeginAt(due)
	l.send(c)
}

// arrived ends an arrival's iteration: its slot waits for the next, or
// leaves at the run's stop or an interrupt.
func (l *loop) arrived(c *conn) {
	l.publish() // before Active, as leave
	l.open.Active(-1)
	if c.u.Interrupted() || l.softClosed() {
		l.leaveSlot(c)
		return
	}
	l.idle = append(l.idle, c)
}

func (l *loop) leaveSlot(c *conn) {
	l.closeConn(c)
	l.conns[c.slot] = nil
	l.free = append(l.free, c.slot)
	l.users--
}

// closeIdle lets the idle slots leave at the run's stop.
func (l *loop) closeIdle() {
	for i, c := range l.idle {
		l.idle[i] = nil
		l.leaveSlot(c)
	}
	l.idle = l.idle[:0]
}
