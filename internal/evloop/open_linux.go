//go:build linux

package evloop

import (
	"time"

	"github.com/stampede-load/stampede/internal/vu"
)

// The open model on the loops (Config.Open).

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
