//go:build linux

package evloop

import (
	"io"
	"net"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/epoll"
	"github.com/stampede-load/stampede/internal/httpc"
)

// A user's request on its loop: sent, read and judged, then finished.

func (l *loop) closeConn(c *conn) {
	if c.tc != nil {
		// Closing sends close_notify, as tls.Conn.Close does, and closes
		// the socket.
		c.tc.Close()
		c.tc, c.fd = nil, -1
	}
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
	if l.fatal != nil {
		// A step after the loop failed (endAll), or a redirect's next
		// hop: none goes on the wire, so none is counted as a request
		// that failed, and the user leaves (drain).
		c.u.LoopUnsent(c.sc.steps[c.pc].st)
		c.goOn = false
		l.runq = append(l.runq, c)
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
		if c.tl != nil {
			l.handshake(c)
			return
		}
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
	// in two parts. It cannot fail on a TCP socket, and would only cost
	// that delay if it did.
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	c.fd = fd
	// Numbered across the loop: a slot a user left may be another's,
	// and an event of the old socket must not reach it.
	l.gen++
	c.gen = l.gen
	if err := l.addEdge(c, true); err != nil {
		l.ctlFailed(c, "dial", err)
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
	if !l.watchOut(c, false) {
		return
	}
	c.state = stWriting
	l.write(c)
}

// watchOut sets whether the socket's writability is watched (reading
// always is). A socket the loop cannot watch as the request needs would
// wait for an event that never comes: its request fails now (false).
func (l *loop) watchOut(c *conn, on bool) bool {
	if err := l.modEdge(c, on); err != nil {
		l.ctlFailed(c, "write", err)
		return false
	}
	return true
}

func (l *loop) write(c *conn) {
	if c.tc != nil {
		l.writeTLS(c)
		return
	}
	for len(c.out) > 0 {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[0])), uintptr(len(c.out)), unix.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			c.out = c.out[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			l.watchOut(c, true)
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
		if events&(epoll.Out|epoll.Err|epoll.Hup) == 0 {
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
		if c.tc != nil {
			l.writableTLS(c, events, now)
			return
		}
		if events&epoll.Out != 0 {
			l.write(c)
			if len(c.out) == 0 && c.fd >= 0 {
				l.watchOut(c, false)
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
	case stHandshaking:
		// The socket is the dialing goroutine's until it is handed over.
	default:
		// Bytes or a close between requests are found by the next
		// answer's read, as after RoundTrip's look.
		if l.open != nil && c.tc != nil {
			l.idleTLS(c, events)
			return
		}
		if l.open != nil && c.fd >= 0 && c.reused && events&(epoll.In|epoll.RDHup|epoll.Hup|epoll.Err) != 0 {
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
// drained) and judges the answer: over TLS, the plaintext of the whole
// records read (tls_linux.go).
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
			end = l.readErr(c, e)
			n = 0
		case n == 0:
			end = io.EOF
		}
		data := l.rbuf[:n]
		if c.tc != nil {
			if data, end = l.decrypt(c, data, end); len(data) == 0 && end == nil {
				continue // a record in part, or one that carried no data
			}
		}
		if l.judge(c, data, end, events) {
			return
		}
	}
}

func (l *loop) readErr(c *conn, errno unix.Errno) error {
	if c.tc != nil {
		return c.tc.ReadError(errno)
	}
	return l.opErr("read", os.NewSyscallError("read", errno))
}

// judge parses data, the next bytes of the answer, and end, what the
// socket said after them, and finishes the request once the answer is
// whole or failed (done). An answer that one read holds whole is parsed
// from the read buffer; one that is not goes to a Stream, which parses it
// as its bytes come, in bounded memory.
func (l *loop) judge(c *conn, data []byte, end error, events uint32) (done bool) {
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
		return false // until the socket is drained (EAGAIN)
	}
	l.endStream(c)
	err = l.judged(c, err)
	// A close that came with the answer (EPOLLRDHUP) makes the
	// connection unusable, as RoundTrip's look after an answer finds.
	if err != nil || closeAfter || end != nil || events&(epoll.RDHup|epoll.Hup|epoll.Err) != 0 {
		l.closeConn(c)
	} else {
		c.reused = true
	}
	// The answer's end is when this read completed it, not when the
	// batch of events began: one clock read per answer, as the
	// goroutine engine's.
	l.finish(c, err, time.Now())
	return true
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
	err = l.judged(c, err)
	if err != nil {
		l.closeConn(c)
	}
	c.state = 0
	c.out = nil
	l.inflight--
	l.busy--
	sr := &c.sc.steps[c.pc]
	latency := now.Sub(c.sent) - c.handshake
	if !c.from.IsZero() {
		// From when it was due: everything it waited for, a handshake
		// included.
		latency, c.from = now.Sub(c.from), time.Time{}
	}
	c.handshake = 0
	c.goOn = c.u.LoopDone(sr.st, err, c.sent, max(latency, 0)) && c.pc+1 < len(c.sc.steps)
	l.runq = append(l.runq, c)
}

// drain lets the users whose step finished go on.
func (l *loop) drain() {
	for i := 0; i < len(l.runq); i++ {
		c := l.runq[i]
		l.runq[i] = nil
		if c.u.LoopRedirectDue() {
			// The step answered with a redirect to follow: its next
			// hop, rendered by the user (vu/redirect.go).
			l.send(c)
			continue
		}
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
	return l.opErr(stateOp(c), os.ErrDeadlineExceeded)
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
		if c == nil || c.state == 0 || c.state == stHandshaking || c.deadline == 0 {
			continue // a handshake is bounded by its goroutine's deadline
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
		// A handshake ends by its Interrupt (Transport.Interrupt), on
		// its own goroutine.
		if c.state != 0 && c.state != stHandshaking {
			l.finish(c, httpc.ErrInterrupted, now)
		}
	}
}
