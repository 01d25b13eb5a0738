package httpc

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

func init() {
	newH2Client = func(s *Shared, dial dialFunc) h2Client {
		maxHeader, maxKept := s.opts.limits()
		c := &H2{MaxHeaderBytes: maxHeader, MaxKeptBody: maxKept, dial: dial, NewConnPerRequest: s.opts.NewConnPerRequest, cw: s.cw}
		if pool, ok := s.h2state.(*h2pool); ok {
			c.pool = pool
			c.wake = make(chan struct{}, 1)
			c.stop = make(chan struct{})
			c.timer = time.NewTimer(time.Hour)
			c.timer.Stop()
		}
		return c
	}
	newH2Shared = func(s *Shared) any {
		if !s.opts.H2Shared {
			return nil
		}
		return newH2Pool(s.opts)
	}
}

// H2 is the HTTP/2 client of one virtual user: at most one connection per
// endpoint, one stream at a time (a user is sequential), read by the
// user's own goroutine as H1 reads its connection. It never sends a
// request twice: a request the server refused (REFUSED_STREAM, or a GOAWAY
// below its stream) fails as refused, and the next request opens a new
// stream, on a new connection after a GOAWAY.
type H2 struct {
	conns []*h2conn
	// MaxHeaderBytes and MaxKeptBody are as H1's (0: the defaults).
	MaxHeaderBytes int
	MaxKeptBody    int
	// NewConnPerRequest (http.connection: per-request) closes the
	// connection after each stream, as H1 does after each answer. Shared
	// mode ignores it (a plan cannot ask for both).
	NewConnPerRequest bool
	// dial is the user's dialer (dial.go): TCP for h2c, TLS offering "h2"
	// for https, under max_connections_per_host (the slot goes back when
	// the connection is closed).
	dial dialFunc
	// cw is the run's record of servers that asked for a client
	// certificate (certwatch.go), as H1 uses it.
	cw *certWatcher
	st h2stream
	// Shared mode (h2shared.go): the run's pool, and this user's wake-up,
	// interrupt and timeout; nil in per-user mode.
	pool  *h2pool
	wake  chan struct{}
	stop  chan struct{}
	timer *time.Timer

	// lastEP and lastKey cache the pool key of the last endpoint.
	lastEP  *Endpoint
	lastKey string

	current     atomic.Pointer[h2conn]
	interrupted atomic.Bool
	stopDial    atomic.Pointer[context.CancelFunc]
}

// Interrupt cuts off the request in flight, if any, and makes every later
// request fail at once. It may be called from any goroutine.
func (c *H2) Interrupt() {
	if c.interrupted.Swap(true) {
		return
	}
	if c.stop != nil {
		close(c.stop)
	}
	if stop := c.stopDial.Load(); stop != nil {
		(*stop)()
	}
	if hc := c.current.Load(); hc != nil {
		// It fails only on a connection already closed, which cuts
		// the request off as well.
		_ = hc.nc.SetDeadline(time.Unix(1, 0))
	}
}

// Close closes every connection.
func (c *H2) Close() {
	for len(c.conns) > 0 {
		c.drop(c.conns[len(c.conns)-1], nil)
	}
}

// drop closes hc (telling the server why when err is our connection
// error) and forgets it, with its buffers and HPACK tables.
func (c *H2) drop(hc *h2conn, err error) {
	hc.closeWith(err)
	hc.release()
	for i, x := range c.conns {
		if x == hc {
			c.conns[i] = c.conns[len(c.conns)-1]
			c.conns[len(c.conns)-1] = nil
			c.conns = c.conns[:len(c.conns)-1]
			return
		}
	}
}

// adopt takes a fresh connection that negotiated HTTP/2 (an https dial by
// H1 whose server chose "h2"), for the request about to be sent. Its
// connection slot, if any, is released with it. In shared mode it
// becomes a shared connection, the one the request then takes.
func (c *H2) adopt(ep *Endpoint, nc net.Conn) {
	if c.pool != nil {
		c.pool.adopt(c.origin(ep), newH2conn(ep, nc, c.maxHeader()))
		return
	}
	for _, hc := range c.conns {
		if hc.ep == ep {
			c.drop(hc, nil)
			break
		}
	}
	c.conns = append(c.conns, newH2conn(ep, nc, c.maxHeader()))
}

func (c *H2) maxHeader() int {
	h, _ := limitsOr(c.MaxHeaderBytes, c.MaxKeptBody)
	return h
}

func (c *H2) maxKept() int {
	_, k := limitsOr(c.MaxHeaderBytes, c.MaxKeptBody)
	return k
}

// conn returns the user's connection to ep, after handling what the server
// sent since the last answer; or a new one.
func (c *H2) conn(ep *Endpoint, sent, deadline time.Time) (*h2conn, error) {
	for _, hc := range c.conns {
		if hc.ep != ep {
			continue
		}
		if !hc.usable() {
			c.drop(hc, nil)
			break
		}
		// As H1 does, a reuse right after the last answer (a user that
		// does not think) skips the look: the answer's read just saw the
		// connection, and a GOAWAY sent with an answer came before it.
		looked := hc.lookedAt
		hc.lookedAt = 0
		if d := sent.Sub(clockBase) - looked; looked != 0 && d >= 0 && d < recheckAfter && hc.br.Buffered() == 0 && len(hc.src.pending) == 0 {
			return hc, nil
		}
		err := c.drainPublished(hc, deadline)
		if err == nil {
			return hc, nil
		}
		c.drop(hc, err)
		if c.interrupted.Load() {
			return nil, ErrInterrupted
		}
		break
	}
	hc, err := c.dialConn(ep, deadline)
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, hc)
	return hc, nil
}

// drainPublished runs hc.drainIdle where Interrupt can cut it: a frame
// cut short on an idle connection would otherwise hold the user until
// its deadline. The deadline is set before the interrupted check, so an
// Interrupt after the check moves it into the past.
func (c *H2) drainPublished(hc *h2conn, deadline time.Time) error {
	c.current.Store(hc)
	defer c.current.Store(nil)
	if err := hc.nc.SetReadDeadline(deadline); err != nil {
		return err
	}
	if c.interrupted.Load() {
		return ErrInterrupted
	}
	return hc.drainIdle()
}

// dialConn opens a connection to ep through the user's dialer, cut off by
// Interrupt; over TLS the server must have chosen h2.
func (c *H2) dialConn(ep *Endpoint, deadline time.Time) (*h2conn, error) {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.stopDial.Store(&cancel)
	defer c.stopDial.Store(nil)
	if c.interrupted.Load() {
		return nil, ErrInterrupted
	}
	var alpn []string
	if ep.Scheme == "https" {
		alpn = alpnH2
	}
	nc, proto, err := c.dial(stop, ep, deadline, alpn)
	if err != nil {
		if c.interrupted.Load() {
			return nil, ErrInterrupted
		}
		return nil, err
	}
	if ep.Scheme == "https" && proto != http2.NextProtoTLS {
		nc.Close()
		return nil, fmt.Errorf("%w: the server chose %q by ALPN where h2 was asked", errTLSHandshake, proto)
	}
	return newH2conn(ep, nc, c.maxHeader()), nil
}

// RoundTrip sends req as one stream and reads the answer into resp. A
// connection error closes the connection; a stream error (a reset, a
// refusal, a body that does not match its length) leaves it usable.
func (c *H2) RoundTrip(req *Request, resp *Response) error {
	if c.interrupted.Load() {
		return ErrInterrupted
	}
	sent := req.Sent
	if sent.IsZero() {
		sent = time.Now()
	}
	deadline := sent.Add(req.Timeout)
	if c.pool != nil {
		return c.sharedRoundTrip(req, resp, deadline)
	}
	hc, err := c.conn(req.Endpoint, sent, deadline)
	if err != nil {
		return err
	}
	if err := hc.nc.SetDeadline(deadline); err != nil {
		c.drop(hc, nil)
		return err
	}
	c.current.Store(hc)
	defer c.current.Store(nil)
	if c.interrupted.Load() {
		c.drop(hc, nil)
		return ErrInterrupted
	}
	keep := req.KeepHead
	if req.KeepBody {
		keep = max(keep, c.maxKept())
	}
	streamErr, connErr := hc.exchange(&c.st, req, resp, keep)
	c.noteAnswer(req.Endpoint, hc.gotSettings, &hc.told)
	if connErr != nil {
		connErr = c.blame(req.Endpoint, hc.gotSettings, connErr)
		c.drop(hc, connErr)
		if c.interrupted.Load() {
			return ErrInterrupted
		}
		return connErr
	}
	if !hc.usable() || c.NewConnPerRequest {
		// After a GOAWAY no stream starts here: the next request dials.
		c.drop(hc, nil)
	} else {
		// It fails only on a closed connection, which the next
		// request's look finds.
		_ = hc.nc.SetDeadline(time.Time{})
		hc.lookedAt = max(time.Since(clockBase), 1)
	}
	return streamErr
}

// noteAnswer tells the certificate watcher, once per connection, that a
// server over TLS answered: its SETTINGS came, so it did not refuse us for
// want of a client certificate.
func (c *H2) noteAnswer(ep *Endpoint, answered bool, told *bool) {
	if answered && !*told && ep.Scheme == "https" && c.cw != nil {
		*told = true
		c.cw.answered(ep.Addr)
	}
}

// blame makes a connection failure before the server's SETTINGS a TLS
// failure where the server asked for a client certificate we do not have,
// as H1 does (certwatch.go): in TLS 1.3 its refusal often shows only as
// the connection's reset.
func (c *H2) blame(ep *Endpoint, answered bool, err error) error {
	if answered || ep.Scheme != "https" || c.cw == nil {
		return err
	}
	return c.cw.blame(ep.Addr, err)
}

// exchange runs one stream. connErr is set when the connection must close.
func (c *h2conn) exchange(st *h2stream, req *Request, resp *Response, keep int) (streamErr, connErr error) {
	resp.takeHeaderBufs()
	resp.Status, resp.Body, resp.BodyLen = 0, resp.Body[:0], 0
	st.reset(c.nextID, req, resp, keep, c.peerInitWindow)
	c.nextID += 2
	c.st = st
	defer func() { c.st = nil }()
	if err := c.send(st); err != nil {
		return nil, err
	}
	for !st.done {
		if err := c.step(); err != nil {
			return nil, err
		}
	}
	return st.err, nil
}

// send writes the request: HEADERS (and CONTINUATION), then its body
// within the server's windows.
func (c *h2conn) send(st *h2stream) error {
	if err := c.writeHeaders(st); err != nil {
		return err
	}
	c.needFlush = false
	if len(st.req.Body) == 0 {
		return c.bw.Flush()
	}
	return c.sendBody(st)
}

// writeHeaders writes the request's header block as HEADERS and
// CONTINUATION frames, ending the stream when there is no body.
func (c *h2conn) writeHeaders(st *h2stream) error {
	req := st.req
	c.encodeRequest(req)
	block := c.encBuf.Bytes()
	endStream := len(req.Body) == 0
	maxFrame := int(c.peerMaxFrame)
	for first := true; first || len(block) > 0; first = false {
		chunk := block[:min(len(block), maxFrame)]
		block = block[len(chunk):]
		var err error
		if first {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: st.id, BlockFragment: chunk, EndStream: endStream, EndHeaders: len(block) == 0})
		} else {
			err = c.fr.WriteContinuation(st.id, len(block) == 0, chunk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendBody writes the body as DATA frames no bigger than the server's
// frame size and windows, reading frames while a window is closed. If the
// answer ends first (a server may answer before the body is in), the rest
// is not sent and the stream is cancelled.
func (c *h2conn) sendBody(st *h2stream) error {
	body := st.req.Body
	st.unsent = len(body)
	for st.unsent > 0 && !st.done {
		n := min(int64(st.unsent), int64(c.peerMaxFrame), c.sendWindow, st.sendWindow)
		if n <= 0 {
			if err := c.bw.Flush(); err != nil {
				return err
			}
			if err := c.step(); err != nil {
				return err
			}
			continue
		}
		off := len(body) - st.unsent
		if err := c.fr.WriteData(st.id, int(n) == st.unsent, body[off:off+int(n)]); err != nil {
			return err
		}
		c.sendWindow -= n
		st.sendWindow -= n
		st.unsent -= int(n)
	}
	if st.unsent > 0 && st.err == nil {
		if err := c.fr.WriteRSTStream(st.id, http2.ErrCodeCancel); err != nil {
			return err
		}
	}
	st.unsent = 0
	c.needFlush = false
	return c.bw.Flush()
}
