package httpc

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Over TLS a look at the socket sees records, not the answer's bytes:
// bytes waiting there may be a post-handshake message (a TLS 1.3 session
// ticket or key update) that belongs to no answer, a close_notify, or
// stray application data; and bytes already read off the socket may wait
// inside tls.Conn, decrypted or not. So the look is made through the
// tls.Conn itself, over a socket that, for that one read, never blocks
// between records: tls.Conn processes every whole record that is there
// (storing tickets, answering key updates) and returns application data,
// io.EOF for a close, or our would-block, which it does not keep as the
// connection's error (crypto/tls keeps only errors that are not
// temporary). A record that has only partly arrived is waited for a
// little: its kind is unknown until it is whole.

// recConn is the socket under a user's tls.Conn. It follows the record
// framing of what it reads, so a look knows whether a record has only
// partly arrived.
type recConn struct {
	net.Conn
	rc syscall.RawConn
	// left is the body bytes of the current record still to come; hdr
	// and hdrN gather a record header split across reads.
	left int
	hdr  [5]byte
	hdrN uint8
	// looking makes Read return errWouldBlock instead of waiting at a
	// record boundary (peek).
	looking bool
	// dirty: crypto/tls may hold bytes it read but has not handed out (a
	// read brought more than the record it completed, or decrypted bytes
	// were left over); a look must then go through tls.Conn.
	dirty  bool
	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	recvFn func(fd uintptr) bool
	// out writes records the way H1 writes plain requests (writeOnce).
	out outBuf
	// lp, once an event loop took the connection over (looptls_linux.go),
	// is where records are read from and written to instead of Conn.
	lp loopIO
}

// loopIO is an event loop's side of a TLS connection it drives: reads
// never block, writes are taken whole.
type loopIO interface {
	Read([]byte) (int, error)
	Write([]byte) (int, error)
	Close() error
}

// Close closes the socket, the event loop's once it took it over.
func (c *recConn) Close() error {
	if c.lp != nil {
		return c.lp.Close()
	}
	return c.Conn.Close()
}

func newRecConn(nc net.Conn) *recConn {
	c := &recConn{Conn: nc, rc: rawConnOf(nc), dirty: true}
	c.recvFn = c.recvOnce
	c.out.fn = c.out.writeOnce
	return c
}

// Write writes a record whole without announcing a blocking system call
// to the scheduler, as H1's plain writes do (write_linux.go): on loopback
// that handoff was a large part of a request's cost.
func (c *recConn) Write(p []byte) (int, error) {
	if c.lp != nil {
		return c.lp.Write(p)
	}
	if !rawWrite || c.rc == nil {
		return c.Conn.Write(p)
	}
	c.out.left, c.out.errno = p, 0
	err := c.rc.Write(c.out.fn)
	n := len(p) - len(c.out.left)
	c.out.left = nil
	if oe, ok := err.(*net.OpError); ok && oe.Op == "raw-write" {
		oe.Op = "write"
	}
	if err == nil && c.out.errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", c.out.errno)}
	}
	return n, err
}

// SyscallConn keeps the socket reachable for raw looks.
func (c *recConn) SyscallConn() (syscall.RawConn, error) {
	if c.rc == nil {
		return nil, syscall.EINVAL
	}
	return c.rc, nil
}

// wouldBlock is the error of a look's read that found nothing waiting:
// temporary, so crypto/tls does not keep it as the connection's error.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "nothing to read" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

var errWouldBlock net.Error = wouldBlock{}

// tlsLookWait bounds the wait for the rest of a record that a look found
// only in part.
const tlsLookWait = 20 * time.Millisecond

func (c *recConn) Read(b []byte) (int, error) {
	if c.lp != nil {
		return c.lp.Read(b)
	}
	var n int
	var err error
	switch {
	case !c.looking || c.rc == nil:
		n, err = c.Conn.Read(b)
	case c.left == 0 && c.hdrN == 0:
		n, err = c.readNow(b)
	default:
		// They fail only on a closed socket, whose read says so.
		_ = c.Conn.SetReadDeadline(time.Now().Add(tlsLookWait))
		n, err = c.Conn.Read(b)
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	c.track(b[:n])
	return n, err
}

// readNow reads what the socket holds without waiting.
func (c *recConn) readNow(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rbuf, c.rn, c.rerr = b, 0, 0
	err := c.rc.Read(c.recvFn)
	c.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case c.rerr == syscall.EAGAIN || c.rerr == syscall.EWOULDBLOCK:
		return 0, errWouldBlock
	case c.rerr != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: syscall.Errno(c.rerr)}
	case c.rn == 0:
		return 0, io.EOF
	}
	return c.rn, nil
}

// track follows the TLS record framing over p, the next bytes read.
func (c *recConn) track(p []byte) {
	for len(p) > 0 {
		if c.left > 0 {
			k := min(c.left, len(p))
			c.left -= k
			p = p[k:]
			if c.left == 0 && len(p) > 0 {
				// The next record came in the same read: crypto/tls
				// keeps it until it is asked for more.
				c.dirty = true
			}
			continue
		}
		k := copy(c.hdr[c.hdrN:], p)
		c.hdrN += uint8(k)
		p = p[k:]
		if c.hdrN == uint8(len(c.hdr)) {
			c.left = int(c.hdr[3])<<8 | int(c.hdr[4])
			c.hdrN = 0
		}
		if c.left == 0 && c.hdrN == 0 && len(p) > 0 {
			c.dirty = true
		}
	}
}

func (c *recConn) atBoundary() bool { return c.left == 0 && c.hdrN == 0 }

// settleTLS looks at a kept TLS connection. While crypto/tls holds
// nothing unread (clean), a raw look at the socket decides, as on plain
// HTTP, and only bytes found there (a record of some kind) are read
// through tls.Conn; otherwise the look is made through tls.Conn.
func (hc *h1conn) settleTLS() peekState {
	rec := hc.rec
	if rec == nil || rec.rc == nil || hc.rc == nil {
		return peekIdle
	}
	if !rec.dirty {
		if err := hc.rc.Read(hc.peekFn); err != nil {
			return peekClosed
		}
		if hc.peeked != peekData {
			return hc.peeked
		}
	}
	rec.looking = true
	n, err := hc.tc.Read(hc.one[:])
	rec.looking = false
	switch {
	case n > 0:
		return peekData
	case err == errWouldBlock:
		// crypto/tls asked for more only after taking in every whole
		// record it had: at a record boundary it holds nothing.
		rec.dirty = !rec.atBoundary()
		return peekIdle
	case isTimeout(err):
		// A record that did not finish arriving: whatever it is, the
		// connection is not known to be clean.
		return peekData
	default:
		return peekClosed
	}
}

// tlsIn is what an answer is read through over TLS: it notes when
// tls.Conn may have kept decrypted bytes back (it filled the whole
// buffer asked for), so the next look goes through tls.Conn.
type tlsIn struct {
	tc  *tls.Conn
	rec *recConn
}

func (t *tlsIn) Read(b []byte) (int, error) {
	n, err := t.tc.Read(b)
	if n == len(b) && t.rec != nil {
		t.rec.dirty = true
	}
	return n, err
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
