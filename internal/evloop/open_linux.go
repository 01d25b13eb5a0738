//go:build linux

package evloop

import (
	"time"

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
