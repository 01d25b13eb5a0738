package httpc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
)

// Shared HTTP/2 connections (http.h2_connections: shared): the users of a
// run multiplex their streams over a few connections per endpoint, as a
// browser's tabs or a gRPC client's calls do. A connection takes at most
// the server's SETTINGS_MAX_CONCURRENT_STREAMS streams (h2SharedStreams
// until its SETTINGS arrive, and never more than h2SharedStreams); past
// that a new connection is dialed, up to max_connections_per_host, and
// beyond that a user waits for a free stream. Each connection has one
// reader goroutine; everything on a connection happens under its mutex.
// The truth rules are per-user mode's: nothing is resent, a refusal fails
// at once as refused, a dead connection fails its streams and goes.

// h2SharedStreams bounds the streams of one shared connection.
const h2SharedStreams = 100

// h2pool is the run's shared HTTP/2 connections (Shared.h2state).
type h2pool struct {
	maxConns int // max_connections_per_host (0: none)
	mu       sync.Mutex
	// eps is keyed by origin (h2Origin), not by *Endpoint: users whose
	// host comes from data or a capture each hold their own *Endpoint
	// for the same origin, and share its connections all the same.
	eps    map[string]*h2epPool
	closed bool
}

// h2Origin is the pool's key for ep: what a shared connection serves.
func h2Origin(ep *Endpoint) string { return ep.Scheme + "://" + ep.Addr + "/" + ep.Host }

// ALPN outcomes of an https origin under version auto in shared mode.
const (
	alpnUnknown = iota
	alpnChoseH2
	alpnChoseH1
)

type h2epPool struct {
	muxes   []*h2mux
	dialing bool
	// changed is closed (and replaced) when a stream or a connection
	// frees up or a dial ends: users waiting for room look again.
	changed chan struct{}
	waiters int // users waiting on changed
	// Under version auto over https, one user's first request finds out
	// by ALPN what the origin speaks (probing) while the others wait, so
	// a run opens one connection for it, not one per user.
	alpn    int
	probing bool
}

// h2mux is one shared connection.
type h2mux struct {
	pool *h2pool
	key  string // the pool's key (h2Origin)
	mu   sync.Mutex
	c    *h2conn
	dead error // why the connection died (under mu)
	// winCh is closed (and replaced) when the server opens a window, for
	// bodies waiting to be sent (under mu).
	winCh chan struct{}
	// readerMore: the reader has a whole frame buffered and will flush
	// what is written before it blocks (under mu).
	readerMore bool
	woke       int // streams finished since the reader last flushed (under mu)
	// Read by the pool without mu: how many streams the connection takes,
	// and whether it takes new ones at all.
	maxStreams atomic.Uint32
	open       atomic.Bool
	settled    atomic.Bool // the server's first SETTINGS have been read
	told       bool        // the certificate watcher knows (under mu)
	reserved   int         // streams reserved or in flight (under pool.mu)
}

func newH2Pool(o Options) *h2pool {
	return &h2pool{maxConns: o.MaxConnsPerHost, eps: map[string]*h2epPool{}}
}

// Close closes every shared connection; their readers end.
func (p *h2pool) Close() error {
	p.mu.Lock()
	p.closed = true
	var all []*h2mux
	for _, e := range p.eps {
		all = append(all, e.muxes...)
	}
	p.mu.Unlock()
	for _, m := range all {
		m.mu.Lock()
		m.kill(ErrInterrupted)
		m.mu.Unlock()
	}
	return nil
}

// signal wakes the users waiting for room, if any (under pool.mu): most
// releases find none, and a channel made per release was a tenth of the
// shared path's CPU.
func (e *h2epPool) signal() {
	if e.waiters == 0 {
		return
	}
	e.waiters = 0
	close(e.changed)
	e.changed = make(chan struct{})
}

// acquire reserves a stream on a connection to ep with room, dialing one
// when none has room and the cap allows, else waiting for room.
func (p *h2pool) acquire(key string, deadline time.Time, stop <-chan struct{}, dial func() (*h2conn, error)) (*h2mux, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrInterrupted
		}
		e := p.entry(key)
		unsettled := false
		for _, m := range e.muxes {
			if m.open.Load() && m.reserved < int(m.maxStreams.Load()) {
				m.reserved++
				p.mu.Unlock()
				return m, nil
			}
			unsettled = unsettled || m.open.Load() && !m.settled.Load()
		}
		// A connection whose server has not said its stream limit yet may
		// well have room: wait for its SETTINGS rather than dial another.
		if !e.dialing && !unsettled && (p.maxConns == 0 || len(e.muxes) < p.maxConns) {
			e.dialing = true
			p.mu.Unlock()
			return p.dialMux(e, key, dial)
		}
		wait := e.changed
		e.waiters++
		p.mu.Unlock()
		if err := waitUntil(wait, deadline, stop, errNoStream); err != nil {
			return nil, err
		}
	}
}

// entry is key's connections, made on first use (under mu).
func (p *h2pool) entry(key string) *h2epPool {
	e := p.eps[key]
	if e == nil {
		e = &h2epPool{changed: make(chan struct{})}
		p.eps[key] = e
	}
	return e
}

func (p *h2pool) dialMux(e *h2epPool, key string, dial func() (*h2conn, error)) (*h2mux, error) {
	hc, err := dial()
	p.mu.Lock()
	defer p.mu.Unlock()
	e.dialing = false
	e.signal()
	if err != nil {
		return nil, err
	}
	return p.addMux(e, key, hc, 1), nil
}

// addMux makes hc a shared connection of key with reserved streams taken
// and starts its reader (under mu).
func (p *h2pool) addMux(e *h2epPool, key string, hc *h2conn, reserved int) *h2mux {
	m := &h2mux{pool: p, key: key, c: hc, winCh: make(chan struct{}), reserved: reserved}
	// One stream (the dialer's) until the server's SETTINGS say how many:
	// more, sent before they came, could exceed its limit and be refused.
	m.maxStreams.Store(1)
	m.open.Store(true)
	hc.streams = map[uint32]*h2stream{}
	hc.mux = m
	e.muxes = append(e.muxes, m)
	go m.readLoop()
	return m
}

// errNoStream is a request that waited its whole timeout for a stream on a
// shared connection.
var errNoStream = fmt.Errorf("no free HTTP/2 stream before the timeout: %w", os.ErrDeadlineExceeded)

func waitUntil(ch <-chan struct{}, deadline time.Time, stop <-chan struct{}, timeout error) error {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return timeout
	case <-stop:
		return ErrInterrupted
	}
}

// release gives back a stream reservation.
func (p *h2pool) release(m *h2mux) {
	p.mu.Lock()
	m.reserved--
	if e := p.eps[m.key]; e != nil {
		e.signal()
	}
	p.mu.Unlock()
}

// remove forgets a dead connection.
func (p *h2pool) remove(m *h2mux) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.eps[m.key]
	if e == nil {
		return
	}
	for i, x := range e.muxes {
		if x == m {
			e.muxes = append(e.muxes[:i], e.muxes[i+1:]...)
			break
		}
	}
	e.signal()
}

// readLoop reads the connection's frames and hands each to its stream,
// until the connection dies; then it fails what is in flight, releases the
// connection's buffers and leaves the pool.
func (m *h2mux) readLoop() {
	hc := m.c
	for {
		f, err := hc.fr.ReadFrame()
		room, settled := m.maxStreams.Load(), m.settled.Load()
		m.mu.Lock()
		if m.dead == nil {
			if err != nil {
				err = hc.readError(err)
			} else {
				err = m.afterFrame(hc.handle(f))
			}
			if err != nil {
				m.kill(err)
			}
		}
		if m.dead != nil {
			hc.release()
			m.mu.Unlock()
			m.pool.remove(m)
			return
		}
		batch := m.woke > 0 && !m.readerMore
		if batch {
			// Before blocking in a read, let the users just woken write
			// their next requests; one flush then sends them all.
			m.woke = 0
			m.readerMore = true
		}
		m.mu.Unlock()
		if batch {
			runtime.Gosched()
			m.mu.Lock()
			m.readerMore = false
			if m.dead == nil && hc.bw.Buffered() > 0 {
				// On a closed connection the flush fails too, and says so.
				_ = hc.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if err := hc.bw.Flush(); err != nil {
					m.kill(err)
				}
			}
			m.mu.Unlock()
		}
		if m.maxStreams.Load() > room || m.settled.Load() != settled {
			m.pool.poke(m.key)
		}
	}
}

// poke wakes users waiting for room on ep's connections.
func (p *h2pool) poke(key string) {
	p.mu.Lock()
	if e := p.eps[key]; e != nil {
		e.signal()
	}
	p.mu.Unlock()
}

// errDrained ends a connection the server sent GOAWAY on once its last
// stream is done.
var errDrained = fmt.Errorf("%w: the connection was drained after the server's GOAWAY", ErrServerClosed)

// afterFrame sends what handling a frame queued, publishes the server's
// stream limit, and retires a drained connection.
func (m *h2mux) afterFrame(err error) error {
	hc := m.c
	if err != nil {
		return err
	}
	// While a whole frame waits in the read buffer, the reader comes
	// back without blocking: requests written meanwhile (and our acks)
	// go out together in its flush, one write for many streams.
	hc.needFlush = false
	m.readerMore = hc.wholeFrameBuffered()
	if !m.readerMore && hc.bw.Buffered() > 0 {
		// On a closed connection the flush fails too, and says so.
		_ = hc.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if err := hc.bw.Flush(); err != nil {
			return err
		}
	}
	if hc.gotSettings {
		m.maxStreams.Store(min(hc.peerMaxStreams, h2SharedStreams))
		m.settled.Store(true)
	}
	if !hc.usable() {
		m.open.Store(false)
		if len(hc.streams) == 0 {
			return errDrained
		}
	}
	return nil
}

// kill fails every stream in flight with err and closes the connection
// (under mu). The reader, whose read then fails, releases the buffers.
func (m *h2mux) kill(err error) {
	if m.dead != nil {
		return
	}
	m.dead = err
	m.open.Store(false)
	hc := m.c
	for _, st := range hc.streams {
		if hc.goaway && st.id > hc.goawayLast {
			// The server said it will not process these.
			hc.finish(st, refusedByGoAway(hc.goawayCode, hc.goawayText))
			continue
		}
		hc.finish(st, err)
	}
	if err == errDrained {
		err = nil
	}
	hc.closeWith(err)
}

// streamDone wakes the user of a finished stream (under mu).
func (m *h2mux) streamDone(st *h2stream) {
	m.woke++
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// windowMoved wakes bodies waiting for the server's window (under mu).
func (c *h2conn) windowMoved() {
	if m := c.mux; m != nil {
		close(m.winCh)
		m.winCh = make(chan struct{})
	}
}

// sharedRoundTrip sends req as one stream of a shared connection and waits
// for its answer. A connection found dead or draining before anything was
// sent on it is not a resend: the request goes to another.
func (c *H2) sharedRoundTrip(req *Request, resp *Response, deadline time.Time) error {
	keep := req.KeepHead
	if req.KeepBody {
		keep = max(keep, c.maxKept())
	}
	dial := func() (*h2conn, error) { return c.dialConn(req.Endpoint, deadline) }
	for {
		m, err := c.pool.acquire(c.origin(req.Endpoint), deadline, c.stop, dial)
		if err != nil {
			return err
		}
		sent, err := c.onMux(m, req, resp, keep, deadline)
		if err != nil && !errors.Is(err, ErrInterrupted) {
			err = c.blame(req.Endpoint, m.settled.Load(), err)
		}
		c.pool.release(m)
		if sent || err != nil {
			return err
		}
	}
}

// onMux runs the exchange on m. sent is false when m could take no new
// stream (nothing was sent: the caller picks another connection).
func (c *H2) onMux(m *h2mux, req *Request, resp *Response, keep int, deadline time.Time) (sent bool, err error) {
	st := &c.st
	select {
	case <-c.wake: // a stale wake of an earlier stream
	default:
	}
	m.mu.Lock()
	hc := m.c
	if m.dead != nil || !hc.usable() {
		m.mu.Unlock()
		return false, nil
	}
	resp.takeHeaderBufs()
	resp.Status, resp.Body, resp.BodyLen = 0, resp.Body[:0], 0
	st.reset(hc.nextID, req, resp, keep, hc.peerInitWindow)
	st.wake = c.wake
	hc.nextID += 2
	hc.streams[st.id] = st
	// On a closed connection the send fails too, and says so.
	_ = hc.nc.SetWriteDeadline(deadline)
	if err := m.send(st, deadline, c.stop); err != nil {
		m.kill(err)
		m.mu.Unlock()
		return true, err
	}
	m.mu.Unlock()

	cut := c.awaitAnswer(st.id, deadline)
	m.mu.Lock()
	defer m.mu.Unlock()
	c.noteAnswer(req.Endpoint, m.settled.Load(), &m.told)
	if !st.done {
		hc.finish(st, cut)
		if m.dead == nil {
			// Buffered: the flush reports a failure.
			_ = hc.fr.WriteRSTStream(st.id, http2.ErrCodeCancel)
			_ = hc.nc.SetWriteDeadline(time.Now().Add(time.Second))
			if err := hc.bw.Flush(); err != nil {
				m.kill(err)
			}
		}
	}
	if m.dead == nil && !hc.usable() && len(hc.streams) == 0 {
		m.kill(errDrained)
	}
	return true, st.err
}

// awaitAnswer waits for the reader's word that stream id is done; the
// error says why the wait was cut short instead (nil: it is done).
func (c *H2) awaitAnswer(id uint32, deadline time.Time) error {
	c.timer.Reset(time.Until(deadline))
	var cut error
	select {
	case <-c.wake:
	case <-c.timer.C:
		cut = fmt.Errorf("no answer on HTTP/2 stream %d before the timeout: %w", id, os.ErrDeadlineExceeded)
	case <-c.stop:
		cut = ErrInterrupted
	}
	if !c.timer.Stop() && cut == nil {
		select {
		case <-c.timer.C:
		default:
		}
	}
	return cut
}

// send writes the request's HEADERS and body (under mu); while the server's
// windows are closed it waits without mu, so the reader can open them.
func (m *h2mux) send(st *h2stream, deadline time.Time, stop <-chan struct{}) error {
	hc := m.c
	if err := hc.writeHeaders(st); err != nil {
		return err
	}
	body := st.req.Body
	st.unsent = len(body)
	for st.unsent > 0 && !st.done && m.dead == nil {
		n := min(int64(st.unsent), int64(hc.peerMaxFrame), hc.sendWindow, st.sendWindow)
		if n <= 0 {
			if err := hc.bw.Flush(); err != nil {
				return err
			}
			ch := m.winCh
			m.mu.Unlock()
			err := waitUntil(ch, deadline, stop, errNoStream)
			m.mu.Lock()
			if err != nil {
				// The stream is cut below by the caller's own wait.
				break
			}
			continue
		}
		off := len(body) - st.unsent
		if err := hc.fr.WriteData(st.id, int(n) == st.unsent, body[off:off+int(n)]); err != nil {
			return err
		}
		hc.sendWindow -= n
		st.sendWindow -= n
		st.unsent -= int(n)
	}
	st.unsent = 0
	if m.dead != nil || m.readerMore {
		// The reader flushes before it next blocks (afterFrame).
		return nil
	}
	return hc.bw.Flush()
}

// wholeFrameBuffered reports whether the read buffer holds a whole frame,
// so the next read will not block (the reader's goroutine only).
func (c *h2conn) wholeFrameBuffered() bool {
	n := c.br.Buffered()
	if n < 9 {
		return false
	}
	h, _ := c.br.Peek(9)
	return n >= 9+(int(h[0])<<16|int(h[1])<<8|int(h[2]))
}
