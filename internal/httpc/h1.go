package httpc

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// H1 is the lean HTTP/1.1 client of one virtual user: at most one open
// connection per endpoint, used for one request at a time, as a browser tab
// or a mobile app would.
type H1 struct {
	conns []*h1conn
	// NewConnPerRequest closes the connection after each answer.
	NewConnPerRequest bool
	// MaxHeaderBytes bounds an answer's header block and MaxKeptBody the
	// body bytes kept for KeepBody (0: DefaultMaxHeaderBytes and
	// DefaultMaxKeptBody).
	MaxHeaderBytes int
	MaxKeptBody    int
	// ud dials the user's connections (dial.go); alpn is what its TLS
	// handshakes offer.
	ud   *userDial
	alpn []string

	// current is the connection a request is using right now, so Interrupt
	// (called from another goroutine) can cut it off.
	current     atomic.Pointer[h1conn]
	interrupted atomic.Bool
	// stopDial cancels the dial or the wait for a connection slot in
	// flight: a user there has no connection whose deadline Interrupt
	// could cut, and would otherwise hold the end of the run for its whole
	// timeout. Its context is made per dial: one kept per user (with the
	// channel and child map every dial gave it) was about 450 bytes of
	// every idle connection.
	stopDial atomic.Pointer[context.CancelFunc]
}

// ErrInterrupted is returned for requests cut off by Interrupt.
var ErrInterrupted = errors.New("request interrupted at the end of the run")

// Interrupt cuts off the request in flight, if any, and makes every later
// request fail at once. It may be called from any goroutine.
func (c *H1) Interrupt() {
	c.interrupted.Store(true)
	if stop := c.stopDial.Load(); stop != nil {
		(*stop)()
	}
	if hc := c.current.Load(); hc != nil {
		// It fails only on a connection already closed, which cuts
		// the request off as well.
		_ = hc.nc.SetDeadline(time.Unix(1, 0))
	}
}

type h1conn struct {
	ep *Endpoint
	nc net.Conn
	// via is the proxy the connection goes through (nil: direct), named
	// in its read and write errors.
	via *proxyRoute
	// tc is nc over TLS: raw looks at the socket see records, not the
	// answer's bytes, so a look there is settled through it (peektls.go);
	// rec is the socket under it and tin what answers are read through.
	tc  *tls.Conn
	rec *recConn
	tin *tlsIn
	// br is borrowed from readers only while an answer is being read: an
	// idle connection holds no buffer, which is most of the memory of a
	// user that spends its time thinking.
	br     *bufio.Reader
	reused bool
	// rc and peekFn are made once per connection so that looking at the
	// socket between answers costs a system call and no allocation.
	rc     syscall.RawConn
	peekFn func(fd uintptr) bool
	peeked peekState
	one    [1]byte
	// lookedAt is when the look after the last answer found the socket
	// idle, as time since clockBase (0: no such look stands): a reuse soon
	// after needs no look of its own.
	lookedAt time.Duration
	// proxy is set on a plain-http connection to a proxy (proxy.go).
	proxy *proxyRoute
}

// clockBase turns clock readings into durations, so a connection keeps 8
// bytes for lookedAt rather than a time.Time's 24.
var clockBase = time.Now()

// recheckAfter is how long the look after an answer vouches for the
// connection: a user that sends its next request sooner (one that does not
// think, a few microseconds later) skips the look before reuse, one system
// call of the two each kept-alive request paid. Bytes or a close that come
// in that window are found as they were found just after a look: by the
// next answer's read. A var so a test can widen it.
var recheckAfter = 50 * time.Microsecond

type peekState uint8

const (
	peekIdle   peekState = iota // nothing waiting: the connection is usable
	peekData                    // bytes nobody asked for
	peekClosed                  // EOF or an error: the server closed it
)

// peek looks at the socket without blocking or consuming anything. Go's own
// read with a past deadline would not look at the socket at all.
func (hc *h1conn) peek() peekState {
	if hc.br != nil && hc.br.Buffered() > 0 {
		return peekData
	}
	if hc.tc != nil {
		hc.peeked = hc.settleTLS()
		return hc.peeked
	}
	if hc.rc == nil {
		return peekIdle
	}
	if err := hc.rc.Read(hc.peekFn); err != nil {
		// Recorded too: RoundTrip reads hc.peeked after the call, and a
		// value left from an earlier look would keep a dead connection.
		hc.peeked = peekClosed
		return peekClosed
	}
	return hc.peeked
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
	writers = sync.Pool{New: func() any {
		o := &outBuf{b: make([]byte, 0, 1024)}
		o.fn = o.writeOnce
		return o
	}}
)

// outBuf is a pooled request buffer with what writing it to a raw socket
// needs, so a connection holds none of it between requests.
type outBuf struct {
	b     []byte
	left  []byte // what is left to write
	errno syscall.Errno
	fn    func(fd uintptr) bool // writeOnce, made once per buffer
}

func (hc *h1conn) borrowReader() {
	if hc.br == nil {
		hc.br = readers.Get().(*bufio.Reader)
		if hc.tin != nil {
			hc.br.Reset(hc.tin)
		} else {
			hc.br.Reset(hc.nc)
		}
	}
}

// returnReader gives the buffer back unless it holds bytes of a later
// answer, which must stay with this connection.
func (hc *h1conn) returnReader() {
	if hc.br != nil && hc.br.Buffered() == 0 {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
}

// Close closes every connection.
func (c *H1) Close() {
	for len(c.conns) > 0 {
		c.drop(c.conns[len(c.conns)-1])
	}
}

func (c *H1) drop(hc *h1conn) {
	hc.nc.Close()
	if hc.br != nil {
		hc.br.Reset(nil)
		readers.Put(hc.br)
		hc.br = nil
	}
	for i, x := range c.conns {
		if x == hc {
			c.conns = append(c.conns[:i], c.conns[i+1:]...)
			return
		}
	}
}

func (c *H1) conn(ep *Endpoint, sent, deadline time.Time) (*h1conn, error) {
	for _, hc := range c.conns {
		if hc.ep != ep {
			continue
		}
		// A reuse looks first (one system call) unless the look after the
		// last answer was just now: a connection the server closed, or one
		// holding bytes that arrived after its last answer was read, would
		// otherwise fail this request for a fault that is not this
		// request's.
		looked := hc.lookedAt
		hc.lookedAt = 0
		if hc.peeked == peekIdle && looked != 0 {
			if d := sent.Sub(clockBase) - looked; d >= 0 && d < recheckAfter {
				hc.reused = true
				return hc, nil
			}
		}
		if hc.peek() == peekIdle {
			hc.reused = true
			return hc, nil
		}
		c.drop(hc)
		break
	}
	nc, err := c.dialNew(ep, deadline)
	if err != nil {
		return nil, err
	}
	hc := &h1conn{ep: ep, nc: nc, via: c.ud.sh.route(ep)}
	if ep.Scheme == "http" {
		// Through a proxy, a plain-http request goes in absolute form.
		hc.proxy = hc.via
	}
	if hc.tc, _ = nc.(*tls.Conn); hc.tc != nil {
		hc.rec, _ = hc.tc.NetConn().(*recConn)
		hc.tin = &tlsIn{tc: hc.tc, rec: hc.rec}
	}
	if hc.rc = rawConnOf(nc); hc.rc != nil {
		hc.peekFn = hc.peekOnce
	}
	c.conns = append(c.conns, hc)
	return hc, nil
}

// dialNew opens a new connection to ep for a request due by deadline,
// which Interrupt cuts off. A TLS handshake that chose h2 is
// errNegotiatedH2.
func (c *H1) dialNew(ep *Endpoint, deadline time.Time) (net.Conn, error) {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Published before the flag is read, as current is in RoundTrip: an
	// Interrupt in between either finds cancel or is seen here.
	c.stopDial.Store(&cancel)
	defer c.stopDial.Store(nil)
	if c.interrupted.Load() {
		return nil, ErrInterrupted
	}
	nc, proto, err := c.ud.dial(stop, ep, deadline, c.alpn)
	if err != nil {
		if c.interrupted.Load() {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	if proto == "h2" {
		return nil, errNegotiatedH2{nc: nc}
	}
	return nc, nil
}

func (c *H1) limitsOrDefault() (header, body int) {
	return limitsOr(c.MaxHeaderBytes, c.MaxKeptBody)
}

// RoundTrip sends req and reads the answer into resp. Any error leaves the
// connection closed, so the next request starts clean.
func (c *H1) RoundTrip(req *Request, resp *Response) error {
	if c.interrupted.Load() {
		return ErrInterrupted
	}
	sent := req.Sent
	if sent.IsZero() {
		sent = time.Now()
	}
	deadline := sent.Add(req.Timeout)
	hc, err := c.conn(req.Endpoint, sent, deadline)
	if err != nil {
		return err
	}
	err = c.exchange(hc, req, resp, deadline)
	if hc.tc != nil {
		if err != nil {
			return c.ud.sh.cw.blame(req.Endpoint.Addr, err)
		}
		c.ud.sh.cw.answered(req.Endpoint.Addr)
	}
	return err
}

// exchange sends req on hc and reads its answer.
func (c *H1) exchange(hc *h1conn, req *Request, resp *Response, deadline time.Time) error {
	// The deadline is set before the connection is published and the
	// flag read after: an Interrupt in between then either sees this
	// connection and cuts it after this deadline was set, or is seen here.
	if err := hc.nc.SetDeadline(deadline); err != nil {
		c.drop(hc)
		return err
	}
	c.current.Store(hc)
	defer c.current.Store(nil)
	if c.interrupted.Load() {
		c.drop(hc)
		return ErrInterrupted
	}
	ob := writers.Get().(*outBuf)
	ob.b = appendHeadVia(ob.b[:0], req, hc.proxy)
	// A small body goes in the head's write; a big one is written from
	// where it is, so no pooled buffer grows to its size and stays so.
	big := len(req.Body) > separateBodyOver
	if !big {
		ob.b = append(ob.b, req.Body...)
	}
	err := hc.write(ob, ob.b)
	if err == nil && big {
		err = hc.write(ob, req.Body)
	}
	writers.Put(ob)
	if err != nil {
		c.drop(hc)
		return hc.via.ioError(err) // proxy.go
	}
	hc.borrowReader()
	maxHeader, maxKept := c.limitsOrDefault()
	closeAfter, err := readResponse(hc.br, req, resp, maxHeader, maxKept)
	if err == nil && hc.proxy != nil && resp.Status == 407 {
		err = errProxyAuth(hc.proxy)
	}
	tail := 0
	if err == nil {
		// A kept connection must carry no deadline: a passed one (this
		// request's, once the user has thought longer than its timeout)
		// makes every look at the socket fail at once, so the next reuse
		// would take a live connection for a closed one and dial anew.
		// It fails only on a closed connection, which that look finds.
		_ = hc.nc.SetDeadline(time.Time{})
		// What follows the answer: read along with it, or found by a
		// look at a connection that is to be kept.
		if tail = hc.br.Buffered(); tail == 0 && !closeAfter && !c.NewConnPerRequest && hc.peek() == peekData {
			tail = 1
		}
	}
	if closeAfter, err = answerEnd(closeAfter, err, hc.reused, tail); err != nil {
		c.drop(hc)
		return hc.via.ioError(err) // proxy.go
	}
	if closeAfter || c.NewConnPerRequest || hc.peeked == peekClosed {
		c.drop(hc)
		return nil
	}
	if hc.peeked == peekIdle && hc.rc != nil {
		hc.lookedAt = max(time.Since(clockBase), 1)
	}
	hc.returnReader()
	return nil
}

// write writes p whole, through ob's writeOnce where it can.
func (hc *h1conn) write(ob *outBuf, p []byte) error {
	if !rawWrite || hc.rc == nil || hc.tc != nil {
		_, err := hc.nc.Write(p)
		return err
	}
	ob.left, ob.errno = p, 0
	err := hc.rc.Write(ob.fn)
	ob.left = nil
	if oe, ok := err.(*net.OpError); ok && oe.Op == "raw-write" {
		// A deadline that fires during the raw write: say "write", as a
		// plain Write (and the event-loop engine) says for the same end.
		oe.Op = "write"
	}
	if err == nil && ob.errno != 0 {
		err = &net.OpError{Op: "write", Net: "tcp", Source: hc.nc.LocalAddr(), Addr: hc.nc.RemoteAddr(), Err: os.NewSyscallError("write", ob.errno)}
	}
	return err
}
