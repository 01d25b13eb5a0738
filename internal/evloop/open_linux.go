//go:build linux

package evloop

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/vu"
)

// The open model on the loops (Config.Open).

// arrive starts every arrival that is due, or due within batchAhead, each
// on an idle slot, a new one, or none (dropped), and sets the timer to the
// next arrival after them.
func (l *loop) arrive() {
	l.tick = false
	now := time.Now()
	// One horizon for the whole turn: a turn that starts the arrivals of
	// the next batchAhead too costs one wake-up of the loop (a timer
	// expiry, an epoll_wait that blocks, the runtime's hand-off of the
	// thread's P) for all of them, where a wake-up per arrival made the
	// open model cost three times the closed one.
	horizon := now.Add(batchAhead)
	for n := 0; n < maxArrivalsPerTurn; n++ {
		if len(l.idle) == 0 && l.answersLeft {
			// Every slot is busy and answers wait unread: read them
			// first (a wait that does not block), and the arrivals
			// take the slots they free. Dialing instead fed on itself:
			// a turn started twice the requests its wait could read
			// answers for, every start then dialed, a dial costs
			// several requests' time, and a few milliseconds' stall at
			// 20,000/s grew to 50 ms of lateness and 2,500 connections.
			l.tick = true
			return
		}
		// An arrival the loop comes to more than a second late is
		// dropped in bulk (Take), as the goroutine dispatcher's are.
		sc, due, ok := l.arr.Take(now, horizon)
		if !ok {
			l.armNext()
			return
		}
		l.start(sc, due)
		// A slot whose iteration ended at once (a refused connection)
		// is free for the next arrival of the batch, as a goroutine
		// worker that finished is.
		l.drain()
	}
	// A rate the loop cannot keep up with must not keep it from the
	// answers that free its slots: the rest of the batch comes next
	// turn, after a look that does not block.
	l.tick = true
}

// armNext sets the timer to the next arrival's time, or asks for another
// turn at once if that time has passed already.
func (l *loop) armNext() {
	due, ok := l.arr.Next()
	if !ok {
		return // the run's end closes Soft
	}
	d := time.Until(due)
	if d <= 0 {
		l.tick = true
		return
	}
	l.arm(int64(d))
}

// batchAhead is how early an arrival may start, with the arrivals due
// before it, in one turn of the loop. Its latency then counts from its
// send (start), not from its later due time, and its lag is none: the
// schedule's rate holds over any window longer than this, and no latency
// is shortened. A millisecond is the timer resolution wrk2's and oha's
// open models pace at.
const batchAhead = time.Millisecond

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
		tr := l.e.transportOn(l)
		c.tl = tr.tls
		c.u = l.open.NewUser(tr)
		c.resp = c.u.LoopResponse()
		l.add(c)
	} else {
		l.arr.Drop(sc)
		return
	}
	c.sc = l.e.scens[sc]
	c.pc = 0
	l.open.Active(1)
	// The clock is read per start, not once per turn: the starts before
	// this one in a busy turn may have taken it past due, and an arrival
	// sent late counts from its due time, lateness included.
	if now := time.Now(); due.After(now) {
		// Started early (batchAhead): its latency counts from its send,
		// which is when the request began, and it was not late.
		c.from = time.Time{}
		c.u.LoopBeginAt(now)
	} else {
		c.from = due
		c.u.LoopBeginAt(due)
	}
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
	l.freed++
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

// openAhead pre-opens every loop's slots (Prepare), each loop's on a
// goroutine of its own, as its dials are: the loops are not running yet,
// and Wait hands each loop's state back to this goroutine before any
// loop runs.
func (e *Engine) openAhead() {
	var wg sync.WaitGroup
	for _, l := range e.loops {
		if l.preopen > 0 {
			wg.Go(l.openAhead)
		}
	}
	wg.Wait()
}

// openAhead connects the loop's preopen slots before its first arrival
// is taken, and leaves them idle: an arrival then finds a kept-alive
// connection, where at a high rate the first arrivals each waited for a
// dial of their own and, with every slot still connecting, were dropped.
// The connections are dialed together (connectAll), so the wait is one
// round trip, at most preopenBudget. One that fails or is not open by then
// is closed, quietly: no request was asked of it, and the arrivals dial
// for themselves and count what they meet. HTTPS slots are not pre-opened
// (their handshake is a goroutine's).
func (l *loop) openAhead() {
	n := l.preopen
	l.preopen = 0
	if l.e.https {
		return
	}
	for _, fd := range l.connectAll(n) {
		tr := l.e.transportOn(l)
		c := &conn{fd: fd, u: l.open.NewUser(tr)}
		c.resp = c.u.LoopResponse()
		l.add(c)
		l.gen++
		c.gen = l.gen
		if err := l.set.AddEdge(fd, c.slot, c.gen, false); err != nil {
			l.leaveSlot(c)
			continue
		}
		// Held open for arrivals to come, as a kept-alive connection is:
		// one the server closes meanwhile is found idle and redialed
		// (ready), not failed.
		c.reused = true
		l.idle = append(l.idle, c)
	}
}

// preopenBudget bounds the wait for the pre-opened connections: the most
// the first arrivals wait for them (their lateness, counted), far below
// the second after which an arrival is dropped.
const preopenBudget = 100 * time.Millisecond

// connectAll starts n connections to the target at once and returns the
// sockets of those open within preopenBudget; it closes the rest. It
// stops starting more at the first that fails at once (a refused or
// unreachable target, no files left).
func (l *loop) connectAll(n int) []int {
	pending := make([]unix.PollFd, 0, n)
	var open []int
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(l.e.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			break
		}
		// As dial's: no Nagle delay.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		err = unix.Connect(fd, l.sa)
		if err == nil {
			open = append(open, fd)
			continue
		}
		if err != unix.EINPROGRESS && err != unix.EINTR {
			unix.Close(fd)
			break
		}
		pending = append(pending, unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT})
	}
	deadline := time.Now().Add(preopenBudget)
	for left := len(pending); left > 0; {
		wait := time.Until(deadline)
		if wait <= 0 {
			break
		}
		if _, err := unix.Poll(pending, int((wait+time.Millisecond-1)/time.Millisecond)); err != nil && err != unix.EINTR {
			break
		}
		for i := range pending {
			p := &pending[i]
			if p.Fd < 0 || p.Revents == 0 {
				continue
			}
			fd := int(p.Fd)
			if errno, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && errno == 0 {
				open = append(open, fd)
			} else {
				unix.Close(fd)
			}
			p.Fd, left = -1, left-1 // poll skips a negative fd
		}
	}
	for _, p := range pending {
		if p.Fd >= 0 {
			unix.Close(int(p.Fd))
		}
	}
	return open
}
