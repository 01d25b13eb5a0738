// Package httpc sends HTTP requests for virtual users. Plain-HTTP targets go
// through a lean HTTP/1.1 client that reuses every buffer, never retries
// behind the caller's back (so each request the server sees is a request we
// count), and reports failures as the exact transport error. HTTPS speaks
// HTTP/1.1 through the same client over TLS (dial.go, tlsdial.go), each
// user with its own connections and TLS session cache; HTTP/2 (by ALPN,
// required, or h2c) goes to the user's own HTTP/2 client (dial.go, h2*.go).
package httpc

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint is where requests go: one scheme, address and Host header.
type Endpoint struct {
	Scheme string // "http" or "https"
	Addr   string // host:port to dial
	Host   string // Host header value
	TLS    *tls.Config
}

// Field is a header. Values point into reusable buffers and stay valid only
// until the next request on the same client.
type Field struct {
	Name  []byte
	Value []byte
}

// Request is one HTTP request. The caller owns and reuses its buffers.
type Request struct {
	Method    string
	Endpoint  *Endpoint
	PathQuery []byte // origin-form target such as /votes?x=1
	Header    []Field
	Body      []byte
	Timeout   time.Duration
	// Sent is when the caller started the request (zero: now). Passing the
	// caller's clock reading saves a clock read per request.
	Sent time.Time
	// KeepBody asks for the body bytes (for captures and checks); otherwise
	// the body is read off the wire and dropped without being copied.
	KeepBody bool
	// KeepHead keeps at least this many first body bytes even without
	// KeepBody, so a failed answer can say what the server said.
	KeepHead int
}

// Response is filled by a round trip. Its slices are reused by the next one.
type Response struct {
	Status int
	Header []Field
	Body   []byte
	// BodyLen is the body's full length even when it was not kept or was cut
	// at the client's body cap.
	BodyLen int64
	hbuf    []byte
	hb      *headerBufs // where Header and hbuf came from (headerbufs.go)
	// lbuf holds a header line longer than the read buffer.
	lbuf []byte
	// Handshake is how long the TLS handshake of a connection opened for
	// this request took (0 when it went on a kept connection, or over
	// plain TCP). It is a phase of its own, in the run's tls block: a
	// latency counted from the send leaves it out.
	Handshake time.Duration
}

// Cut reports whether the body was kept (KeepBody) but only in part: it was
// longer than the client's cap, so checks and captures saw its beginning.
func (r *Response) Cut() bool { return r.BodyLen > int64(len(r.Body)) }

// CutNote is what a failed check or capture adds to its message when the
// body was cut: the value may lie past what was kept.
func (r *Response) CutNote() string {
	if !r.Cut() {
		return ""
	}
	return fmt.Sprintf(" (in the first %d of the body's %d bytes: raise http.max_kept_body_bytes to look further)", len(r.Body), r.BodyLen)
}

// Get returns the first header with this name (case-insensitive), or nil.
func (r *Response) Get(name string) []byte {
	for _, f := range r.Header {
		if equalFold(f.Name, name) {
			return f.Value
		}
	}
	return nil
}

func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Transport performs round trips for one virtual user. Implementations are
// not safe for concurrent use: each user owns one.
type Transport interface {
	RoundTrip(req *Request, resp *Response) error
	// Interrupt cuts off the request in flight; safe from any goroutine.
	Interrupt()
	Close()
}

var errTLSHandshake = errors.New("tls handshake failed")

// Options configure every transport of a run.
type Options struct {
	TLS *tls.Config
	// NewConnPerRequest closes each connection after its answer (HTTP/2
	// in per-user mode: after its stream).
	NewConnPerRequest bool
	// SourceAddrs are local addresses to dial plain-HTTP connections from,
	// one per user, round-robin.
	SourceAddrs []netip.Addr
	// MaxConnsPerHost caps open plain-HTTP connections per endpoint across
	// all users (0: no cap).
	MaxConnsPerHost int
	// MaxHeaderBytes bounds an answer's header block (0: the default).
	MaxHeaderBytes int
	// MaxKeptBody bounds the body bytes kept for captures and checks (0:
	// the default).
	MaxKeptBody int
	// H2C sends plain-HTTP requests as HTTP/2 with prior knowledge (h2c.go).
	// Deprecated: Protocol ProtoH2C; kept until the plan side sets Protocol.
	H2C bool
	// Protocol picks the HTTP version (dial.go); ProtoAuto by default.
	Protocol Protocol
	// H2Shared multiplexes the users' HTTP/2 streams over shared
	// connections (h2shared.go) instead of one connection per user.
	H2Shared bool
	// Proxy, when set, says which proxy a request to scheme://host goes
	// through (nil: direct), asked once per endpoint (proxy.go).
	Proxy func(scheme, host string) (*url.URL, error)
}

// protocol is o.Protocol with the old H2C flag folded in.
func (o Options) protocol() Protocol {
	if o.H2C && o.Protocol == ProtoAuto {
		return ProtoH2C
	}
	return o.Protocol
}

func (o Options) limits() (header, body int) { return limitsOr(o.MaxHeaderBytes, o.MaxKeptBody) }

// Shared holds what users share: the per-host connection limits, the TLS
// config and handshake counts, and the HTTP/2 clients' shared state.
type Shared struct {
	cw     *certWatcher
	opts   Options
	next   atomic.Uint64
	limits *hostLimits
	// tlsBase is the run's TLS config as every user's handshake starts
	// from it (certwatch.go); tlsStats counts those handshakes.
	tlsBase  *tls.Config
	tlsStats tlsStats
	// h2state is what the users' HTTP/2 clients share (dial.go).
	h2state any
	// dialers are the plain-HTTP users' dialers, one per source address
	// (or one), handed out in turn.
	dialers []*net.Dialer
	// routes are the endpoints' proxy routes (*Endpoint → *proxyRoute,
	// nil for direct), proxy.go.
	routes sync.Map
}

// NewShared builds the shared part of the transports.
func NewShared(o Options) *Shared {
	cw := &certWatcher{}
	sh := &Shared{cw: cw, opts: o, dialers: []*net.Dialer{{}}, tlsBase: cw.config(o.TLS)}
	if len(o.SourceAddrs) > 0 {
		sh.dialers = sh.dialers[:0]
		for _, a := range o.SourceAddrs {
			sh.dialers = append(sh.dialers, &net.Dialer{LocalAddr: &net.TCPAddr{IP: a.AsSlice()}})
		}
	}
	if o.MaxConnsPerHost > 0 {
		sh.limits = &hostLimits{max: o.MaxConnsPerHost, slots: map[string]chan struct{}{}}
	}
	if newH2Shared != nil {
		sh.h2state = newH2Shared(sh)
	}
	return sh
}

// Close closes what the users' HTTP/2 clients share.
func (s *Shared) Close() {
	if c, ok := s.h2state.(io.Closer); ok {
		c.Close()
	}
}

// NewTransport returns a transport for one virtual user.
func (s *Shared) NewTransport() *Mux {
	ud := &userDial{sh: s, dialer: s.dialers[0]}
	if n := len(s.opts.SourceAddrs); n > 0 {
		ud.dialer = s.dialers[(s.next.Add(1)-1)%uint64(n)]
	}
	h := &H1{ud: ud, alpn: alpnH1}
	h.NewConnPerRequest = s.opts.NewConnPerRequest
	h.MaxHeaderBytes, h.MaxKeptBody = s.opts.limits()
	m := &Mux{h1: h, proto: s.opts.protocol()}
	if newH2Client != nil {
		m.h2 = newH2Client(s, ud.dial)
	}
	if m.h2 != nil && m.proto == ProtoAuto {
		h.alpn = alpnAuto
	}
	return m
}

// hostLimits hands out connection slots per endpoint address.
type hostLimits struct {
	max   int
	mu    sync.Mutex
	slots map[string]chan struct{}
}

func (l *hostLimits) sem(addr string) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.slots[addr]
	if !ok {
		c = make(chan struct{}, l.max)
		l.slots[addr] = c
	}
	return c
}

// errNoConnSlot is a request that waited its whole timeout for a free
// connection under max_connections_per_host.
var errNoConnSlot = fmt.Errorf("no free connection under max_connections_per_host before the timeout: %w", os.ErrDeadlineExceeded)

// acquire takes a slot for addr, waiting until deadline or until stop is
// closed (Interrupt: ErrInterrupted).
func (l *hostLimits) acquire(addr string, deadline time.Time, stop <-chan struct{}) error {
	sem := l.sem(addr)
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return nil
	case <-t.C:
		return errNoConnSlot
	case <-stop:
		return ErrInterrupted
	}
}

func (l *hostLimits) release(addr string) { <-l.sem(addr) }

// Mux routes one user's requests by protocol: HTTP/1.1 (plain or over
// TLS) to the lean client, HTTP/2 to the user's HTTP/2 client (dial.go).
type Mux struct {
	h1    *H1
	proto Protocol
	h2    h2Client // nil until the HTTP/2 client is wired (dial.go)
	// h2eps are the endpoints whose server chose h2 by ALPN for this user.
	h2eps []*Endpoint
	// h1eps are the https endpoints known to speak HTTP/1.1 in shared
	// mode, so their requests skip asking the pool.
	h1eps []*Endpoint
}

// RoundTrip implements Transport. resp.Handshake is the TLS handshake
// of a connection opened for req (0 on a kept one).
func (m *Mux) RoundTrip(req *Request, resp *Response) error {
	err := m.roundTrip(req, resp)
	resp.Handshake = time.Duration(m.h1.ud.handshook.Swap(0))
	return err
}

func (m *Mux) roundTrip(req *Request, resp *Response) error {
	if m.h2 != nil && m.speaksH2(req.Endpoint) {
		return m.h2.RoundTrip(req, resp)
	}
	var probing sharedNegotiator
	if sn, ok := m.h2.(sharedNegotiator); ok && m.proto == ProtoAuto && !slices.Contains(m.h1eps, req.Endpoint) {
		h2, probe, err := sn.negotiated(req)
		switch {
		case err != nil:
			return err
		case h2:
			m.h2eps = append(m.h2eps, req.Endpoint)
			return m.h2.RoundTrip(req, resp)
		case probe:
			probing = sn
		case req.Endpoint.Scheme == "https":
			m.h1eps = append(m.h1eps, req.Endpoint)
		}
	}
	err := m.h1.RoundTrip(req, resp)
	if nc := negotiatedH2(err); nc != nil && m.h2 != nil {
		// Nothing of req was sent on the conn: handing both to the
		// HTTP/2 client is its first sending, not a resend.
		m.h2eps = append(m.h2eps, req.Endpoint)
		m.h2.adopt(req.Endpoint, nc)
		return m.h2.RoundTrip(req, resp)
	}
	if probing != nil {
		chose := alpnChoseH1
		if err != nil {
			chose = alpnUnknown
		}
		probing.probed(req.Endpoint, chose)
	}
	return err
}

// negotiatedH2 is the fresh connection an HTTP/1.1 dial handed over
// because its server chose h2, or nil. The target errors.As writes to
// escapes to the heap, so it is made only for an error: a kept-alive
// request that succeeded allocates nothing here.
func negotiatedH2(err error) net.Conn {
	if err == nil {
		return nil
	}
	var neg errNegotiatedH2
	if errors.As(err, &neg) {
		return neg.nc
	}
	return nil
}

// sharedNegotiator is an HTTP/2 client in shared mode (h2shared.go): the
// first request of the run to an https origin finds out by ALPN what it
// speaks while the other users' first requests wait for the answer.
type sharedNegotiator interface {
	negotiated(req *Request) (h2, probe bool, err error)
	probed(ep *Endpoint, chose int)
}

// speaksH2 reports whether ep's requests go to the HTTP/2 client.
func (m *Mux) speaksH2(ep *Endpoint) bool {
	switch {
	case m.proto == ProtoH2 && ep.Scheme == "https", m.proto == ProtoH2C && ep.Scheme == "http":
		return true
	}
	for _, e := range m.h2eps {
		if e == ep {
			return true
		}
	}
	return false
}

// Close implements Transport.
func (m *Mux) Close() {
	m.h1.Close()
	if m.h2 != nil {
		m.h2.Close()
	}
}

// Interrupt implements Transport.
func (m *Mux) Interrupt() {
	m.h1.Interrupt()
	if m.h2 != nil {
		m.h2.Interrupt()
	}
}

// SetNewConnPerRequest makes the plain-HTTP client close after each answer.
func (m *Mux) SetNewConnPerRequest(v bool) { m.h1.NewConnPerRequest = v }
