//go:build linux

package evloop

import (
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/epoll"
	"github.com/stampede-load/stampede/internal/httpc"
)

// HTTPS users on the loop: a goroutine dials and runs the handshake (the
// goroutine engine's own, httpc.LoopTLS), then the loop drives the
// connection, reading the socket and decrypting what it read through
// httpc.LoopConn before the same parser judges it.

// tlsDialed is a finished dial, handed to the loop through its inbox.
type tlsDialed struct {
	c   *conn
	lc  *httpc.LoopConn
	err error
}

// handshake dials c's connection on a goroutine of its own, bounded by
// the request's deadline and by the user's Interrupt, as RoundTrip's dial.
func (l *loop) handshake(c *conn) {
	c.state = stHandshaking
	sr := &c.sc.steps[c.pc]
	var deadline time.Time
	if sr.timeout > 0 {
		deadline = c.sent.Add(sr.timeout)
	}
	tl, ep := c.tl, sr.req.Endpoint
	go func() {
		lc, err := tl.Dial(ep, deadline)
		l.mu.Lock()
		l.dialed = append(l.dialed, tlsDialed{c: c, lc: lc, err: err})
		l.pending.Store(true)
		l.wakeLocked()
		l.mu.Unlock()
	}()
}

// handshook takes a finished dial: the request is sent on it, or fails
// with the dial's error.
func (l *loop) handshook(d tlsDialed) {
	c := d.c
	if d.err != nil {
		l.finish(c, d.err, time.Now())
		return
	}
	if c.u.Interrupted() {
		// As RoundTrip after a dial the interrupt came during.
		d.lc.Close()
		l.finish(c, httpc.ErrInterrupted, time.Now())
		return
	}
	if l.fatal != nil {
		// No readiness of the connection could be told.
		d.lc.Close()
		l.finish(c, l.opErr("dial", l.fatal), time.Now())
		return
	}
	c.tc, c.fd = d.lc, d.lc.FD()
	c.handshake = d.lc.Handshake()
	l.gen++
	c.gen = l.gen
	if err := l.addEdge(c, false); err != nil {
		l.ctlFailed(c, "dial", err)
		return
	}
	c.state = stWriting
	l.writeTLS(c)
}

// writeTLS sends the request over TLS, a piece at a time as the socket
// takes them (httpc.LoopConn.Write): what is left is sent when the socket
// is writable (writableTLS), so a large body is never held encrypted.
func (l *loop) writeTLS(c *conn) {
	c.exchanging = true
	// The connection holds the request's bytes until it is sent; they
	// stay unchanged until the request finishes (the step's, or the
	// user's custom buffer, rewritten only for its next request).
	err := c.tc.Write(c.out)
	c.out = nil
	if err != nil {
		l.finish(c, err, time.Now())
		return
	}
	if c.tc.Pending() {
		l.watchOut(c, true)
		return
	}
	c.state = stReading
}

func (l *loop) writableTLS(c *conn, events uint32, now time.Time) {
	if events&epoll.Out != 0 {
		pending, err := c.tc.Flush()
		if err != nil {
			l.finish(c, err, now)
			return
		}
		if pending {
			return
		}
		if !l.watchOut(c, false) {
			return
		}
		c.state = stReading
	}
	if c.state == stReading {
		// An answer that came while the request was still being sent
		// was reported then: look now.
		l.readable(c, events, now)
	}
}

// decrypt turns what one read brought (raw, then end) into plaintext and
// what the connection said after it (io.EOF for a close_notify).
func (l *loop) decrypt(c *conn, raw []byte, end error) ([]byte, error) {
	plain, err := c.tc.Decrypt(raw, end, l.pbuf[:0])
	l.pbuf = plain[:0]
	return plain, err
}

// judged is the outcome of an exchange as the goroutine engine reports
// it over TLS (httpc.LoopConn.Outcome); other outcomes are err itself.
func (l *loop) judged(c *conn, err error) error {
	if !c.exchanging {
		return err
	}
	c.exchanging = false
	return c.tc.Outcome(err)
}

// idleTLS looks at an idle slot's TLS connection that the socket says
// has something: records that carry no data (a session ticket, a key
// update) are taken in and the connection stays; data, a close_notify or
// a close end it, as RoundTrip's look before a reuse finds.
func (l *loop) idleTLS(c *conn, events uint32) {
	for {
		n, err := unix.Read(c.fd, l.rbuf)
		var end error
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			if events&(epoll.RDHup|epoll.Hup|epoll.Err) != 0 {
				l.closeConn(c)
			}
			return
		case err != nil:
			end = err
			n = 0
		case n == 0:
			end = io.EOF
		}
		plain, derr := l.decrypt(c, l.rbuf[:n], end)
		if len(plain) > 0 || derr != nil {
			l.closeConn(c)
			return
		}
	}
}
