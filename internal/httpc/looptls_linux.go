//go:build linux

package httpc

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HTTPS on the event-loop engine (internal/evloop). The handshake is the
// goroutine engine's own (userDial: the run's config, the user's session
// cache, timed into the run's TLS stats, blamed by the certificate
// watch), run on a goroutine of its own; then the loop takes the socket
// out of Go's poller and drives the tls.Conn over it: the loop reads the
// socket and hands the bytes to tls.Conn through loopSocket, which
// answers "would block" when they are used up. crypto/tls keeps no
// temporary error as the connection's (conn.go, readRecordOrCCS), so the
// next Read resumes where the last left off; session tickets, key updates
// and close_notify are taken in by tls.Conn as on the goroutine engine.
// A request is encrypted a piece at a time (writePiece of plaintext), the
// next piece only once the socket took the last: what the socket has not
// taken waits in loopSocket until the loop sees it writable (Flush), so a
// connection holds at most one piece's records whatever the body's size.

// LoopTLS is one event-loop user's TLS dialer: its own session cache and
// Interrupt, as a goroutine user's H1 has.
type LoopTLS struct {
	h1 *H1
}

// NewLoopTLS returns the TLS dialer of one event-loop user, dialing as
// a user of NewTransport over HTTP/1.1 does.
func (s *Shared) NewLoopTLS() *LoopTLS {
	h := &H1{ud: &userDial{sh: s, dialer: s.dialers[0]}, alpn: alpnH1}
	h.MaxHeaderBytes, h.MaxKeptBody = s.opts.limits()
	return &LoopTLS{h1: h}
}

// Interrupt cuts off a Dial in flight and makes every later one fail with
// ErrInterrupted; safe from any goroutine.
func (t *LoopTLS) Interrupt() { t.h1.Interrupt() }

// LoopConn is a TLS connection an event loop drives; one goroutine at a
// time uses it.
type LoopConn struct {
	tc   *tls.Conn
	sock *loopSocket
	// rest is the plaintext of the request being sent that tls.Conn has
	// not been given yet (the caller's bytes, not a copy).
	rest []byte
	addr string
	cw   *certWatcher
	// handshake is how long the TLS handshake took.
	handshake time.Duration
}

// writePiece is the most plaintext given to tls.Conn at once: its records
// are what a connection may hold that the socket has not taken.
const writePiece = 64 << 10

// errNotLoopable is a connection the loop cannot take over (a wrapper
// other than a plain TCP socket under the TLS).
var errNotLoopable = errors.New("httpc: connection cannot be driven by an event loop")

// Dial connects to ep and runs the TLS handshake, bounded by deadline and
// Interrupt, and hands the socket over for the loop to drive. It blocks:
// the loop calls it from a goroutine of its own.
func (t *LoopTLS) Dial(ep *Endpoint, deadline time.Time) (*LoopConn, error) {
	// A handshake of a dial that failed after it is no later dial's.
	t.h1.ud.handshook.Store(0)
	nc, err := t.h1.dialNew(ep, deadline)
	if err != nil {
		return nil, err
	}
	tc, _ := nc.(*tls.Conn)
	if tc == nil {
		nc.Close()
		return nil, errNotLoopable
	}
	rec, _ := tc.NetConn().(*recConn)
	var tcp *net.TCPConn
	if rec != nil {
		tcp, _ = rec.Conn.(*net.TCPConn)
	}
	if tcp == nil {
		tc.Close()
		return nil, errNotLoopable
	}
	fd, err := dupSocket(tcp)
	if err != nil {
		tc.Close()
		return nil, err
	}
	sock := &loopSocket{fd: fd, src: tcp.LocalAddr(), dst: tcp.RemoteAddr()}
	// Go's poller forgets the socket; the duplicate keeps it open, and
	// from now on tls.Conn reads and writes through the loop's side.
	tcp.Close()
	rec.lp = sock
	return &LoopConn{tc: tc, sock: sock, addr: ep.Addr, cw: t.h1.ud.sh.cw,
		handshake: time.Duration(t.h1.ud.handshook.Swap(0))}, nil
}

// Handshake is how long the connection's TLS handshake took: a phase of
// its own, which a latency from the send leaves out (Response.Handshake).
func (c *LoopConn) Handshake() time.Duration { return c.handshake }

// dupSocket duplicates the socket's descriptor (close-on-exec; still
// non-blocking, a flag of the socket, not of the descriptor).
func dupSocket(tcp *net.TCPConn) (int, error) {
	rc, err := tcp.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return fd, nil
}

// FD is the socket the loop watches.
func (c *LoopConn) FD() int { return c.sock.fd }

// Write starts sending p, encrypted as tls.Conn.Write does, a piece at a
// time for as long as the socket takes them; the rest waits for Flush. p
// must stay unchanged until Pending says false or the connection closes.
func (c *LoopConn) Write(p []byte) error {
	c.rest = p
	_, err := c.Flush()
	return err
}

// Flush sends what the socket did not take before, then the next pieces
// of the request; pending says some is still waiting (wait for the socket
// to be writable).
func (c *LoopConn) Flush() (pending bool, err error) {
	for {
		if pending, err := c.sock.flush(); pending || err != nil {
			return pending, err
		}
		if len(c.rest) == 0 {
			return false, nil
		}
		piece := c.rest[:min(len(c.rest), writePiece)]
		c.rest = c.rest[len(piece):]
		if _, err := c.tc.Write(piece); err != nil {
			c.rest = nil
			return false, err
		}
	}
}

// Pending says some of the request still waits for the socket.
func (c *LoopConn) Pending() bool { return c.sock.buffered() > 0 || len(c.rest) > 0 }

// Decrypt hands tls.Conn raw, the bytes the loop just read off the
// socket, and end, what the socket said after them (nil: open), and
// appends to dst the plaintext that every whole record gives. Session
// tickets and key updates are taken in on the way. err is io.EOF after a
// close_notify (or a close at a record boundary), or the connection's
// error, as tls.Conn.Read reports them to the goroutine engine.
func (c *LoopConn) Decrypt(raw []byte, end error, dst []byte) ([]byte, error) {
	s := c.sock
	s.in, s.end = raw, end
	defer func() { s.in, s.end = nil, nil }()
	for {
		if cap(dst)-len(dst) < minPlainRoom {
			dst = append(dst, make([]byte, minPlainRoom)...)[:len(dst)]
		}
		n, err := c.tc.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		switch err {
		case nil:
		case errWouldBlock:
			return dst, nil
		default:
			return dst, err
		}
	}
}

// minPlainRoom is the room Decrypt leaves for one record's plaintext.
const minPlainRoom = 16 << 10

// Close sends close_notify if the socket takes it at once, and closes
// the socket, as tls.Conn.Close does on the goroutine engine.
func (c *LoopConn) Close() {
	c.rest = nil
	// Its error is the socket's close, of a descriptor this connection
	// alone held: nothing is left to undo.
	_ = c.tc.Close()
}

// Outcome is what an exchange on the connection ended with, err (nil: an
// answer), as the goroutine engine reports it: a failure that a server's
// refused certificate explains is blamed on it (certwatch.go).
func (c *LoopConn) Outcome(err error) error {
	if err != nil {
		return c.cw.blame(c.addr, err)
	}
	c.cw.answered(c.addr)
	return nil
}

// loopSocket is a loop-driven connection's socket as tls.Conn sees it.
type loopSocket struct {
	fd  int
	in  []byte // read by the loop, not yet taken by tls.Conn
	end error  // what the socket said after in (nil: still open)
	out []byte // written; out[off:] not yet taken by the socket
	off int
	// peak is the most bytes that ever waited in out (tests).
	peak int
	src  net.Addr
	dst  net.Addr
}

func (s *loopSocket) Read(b []byte) (int, error) {
	if len(s.in) == 0 {
		if s.end != nil {
			return 0, s.end
		}
		return 0, errWouldBlock
	}
	n := copy(b, s.in)
	s.in = s.in[n:]
	return n, nil
}

// Write takes p whole: sent now as far as the socket takes it, the rest
// kept for flush. A socket error is reported as net reports it.
func (s *loopSocket) Write(p []byte) (int, error) {
	if s.buffered() > 0 {
		s.out = append(s.out, p...)
		s.peak = max(s.peak, s.buffered())
		return len(p), nil
	}
	n, err := s.send(p)
	if err != nil {
		return n, err
	}
	s.out, s.off = append(s.out[:0], p[n:]...), 0
	s.peak = max(s.peak, s.buffered())
	return len(p), nil
}

func (s *loopSocket) buffered() int { return len(s.out) - s.off }

// flush sends what waits, moving an offset along it rather than the bytes
// to its front; pending says some is still waiting.
func (s *loopSocket) flush() (pending bool, err error) {
	if s.buffered() == 0 {
		return false, nil
	}
	n, err := s.send(s.out[s.off:])
	s.off += n
	if err != nil {
		return false, err
	}
	if s.buffered() > 0 {
		return true, nil
	}
	s.out, s.off = s.out[:0], 0
	if cap(s.out) > keptOutCap {
		s.out = nil
	}
	return false, nil
}

// keptOutCap bounds the write buffer a connection keeps between requests:
// one piece's records (writePiece and their framing) fit in it.
const keptOutCap = writePiece + 16<<10

// send writes what the socket takes now, without blocking.
func (s *loopSocket) send(p []byte) (int, error) {
	sent := 0
	for sent < len(p) {
		n, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(s.fd), uintptr(unsafe.Pointer(&p[sent])), uintptr(len(p)-sent), syscall.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			sent += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return sent, nil
		default:
			return sent, &net.OpError{Op: "write", Net: "tcp", Source: s.src, Addr: s.dst, Err: os.NewSyscallError("write", e)}
		}
	}
	return sent, nil
}

// Close closes the socket (which takes it out of the loop's epoll set).
func (s *loopSocket) Close() error {
	if s.fd < 0 {
		return nil
	}
	err := unix.Close(s.fd)
	s.fd = -1
	return err
}

// ReadError is a read of the socket that failed with errno, as net
// reports it to the goroutine engine.
func (c *LoopConn) ReadError(errno syscall.Errno) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: c.sock.src, Addr: c.sock.dst, Err: os.NewSyscallError("read", errno)}
}

var _ io.ReadWriteCloser = (*loopSocket)(nil)
