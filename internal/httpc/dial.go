package httpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The dial contract between the HTTP/1.1 client (h1.go) and the HTTP/2
// client (h2*.go):
//
//   - Every connection of a user, whatever its protocol, comes from that
//     user's dialFunc: TCP from the user's source address under
//     max_connections_per_host, then for https the TLS handshake (the
//     run's config, the user's own session cache, ALPN as asked, timed
//     into the run's TLS stats, bounded by deadline and cut when ctx is
//     cancelled). The connection slot is released when the returned conn
//     is closed, so a client only has to Close what it dialed.
//   - Mux routes by Options.Protocol. For https under ProtoAuto the H1
//     client dials offering ["h2", "http/1.1"] once an HTTP/2 client is
//     wired (Mux.h2 != nil; only "http/1.1" before). When the server picks
//     "h2", H1 sends nothing: it returns errNegotiatedH2 carrying the fresh
//     conn; Mux hands that conn to h2Client.adopt and gives the same
//     request to h2Client.RoundTrip (nothing was sent yet, so this is not
//     a resend). Mux then remembers that the endpoint speaks h2 and sends
//     that user's later requests to it straight away; the HTTP/2 client
//     dials its own later connections through the same dialFunc.
//   - The HTTP/2 client is built per user by newH2Client (nil until the
//     HTTP/2 files set it in an init); state it shares between the users
//     of a run lives in Shared.h2state, made by newH2Shared. Shared.Close
//     closes h2state when it is an io.Closer.

// dialFunc opens a connection to ep for one user: TCP (from the user's
// source address, under max_connections_per_host), then for https the TLS
// handshake offering alpn, timed and recorded. proto is the negotiated
// ALPN protocol ("" for plain TCP or none).
type dialFunc func(ctx context.Context, ep *Endpoint, deadline time.Time, alpn []string) (nc net.Conn, proto string, err error)

// h2Client is one user's HTTP/2 client (h2*.go).
type h2Client interface {
	// adopt takes a TLS connection whose handshake chose "h2".
	adopt(ep *Endpoint, nc net.Conn)
	RoundTrip(*Request, *Response) error
	Interrupt()
	Close()
}

var (
	// newH2Shared, when set, makes the HTTP/2 state the users of one
	// Shared have in common.
	newH2Shared func(s *Shared) any
	// newH2Client, when set, makes one user's HTTP/2 client; dial is
	// that user's dialFunc.
	newH2Client func(s *Shared, dial dialFunc) h2Client
)

// Protocol is the HTTP version a run speaks.
type Protocol uint8

const (
	// ProtoAuto: https negotiates by ALPN (h2 or http/1.1), http is
	// HTTP/1.1.
	ProtoAuto Protocol = iota
	// ProtoHTTP1: HTTP/1.1 only, over TLS for https.
	ProtoHTTP1
	// ProtoH2: HTTP/2 over TLS, h2 required (https only).
	ProtoH2
	// ProtoH2C: HTTP/2 over plain TCP with prior knowledge.
	ProtoH2C
)

var (
	alpnH1   = []string{"http/1.1"}
	alpnAuto = []string{"h2", "http/1.1"}
	alpnH2   = []string{"h2"}
)

// errNegotiatedH2 is H1's answer to a request whose fresh TLS connection
// chose HTTP/2: the connection goes to the user's HTTP/2 client with the
// request, unsent.
type errNegotiatedH2 struct{ nc net.Conn }

func (errNegotiatedH2) Error() string { return "server chose h2 by ALPN" }

// userDial is one user's dialer: what it shares with the users of its
// source address, and its own TLS session cache, made at its first
// handshake.
type userDial struct {
	sh     *Shared
	dialer *net.Dialer
	mu     sync.Mutex
	cache  tls.ClientSessionCache
	cfgs   []*tls.Config // tlsdial.go
	// handshook is the time (ns) of the TLS handshakes done since the
	// last request took it (Response.Handshake).
	handshook atomic.Int64
}

// dial implements dialFunc.
func (u *userDial) dial(ctx context.Context, ep *Endpoint, deadline time.Time, alpn []string) (net.Conn, string, error) {
	limits := u.sh.limits
	if limits != nil {
		if err := limits.acquire(ep.Addr, deadline, ctx.Done()); err != nil {
			return nil, "", err
		}
	}
	var d net.Dialer
	if u.dialer != nil {
		d = *u.dialer
	}
	d.Deadline = deadline
	route, addr := u.sh.route(ep), ep.Addr // proxy.go
	if route != nil {
		if route.err != nil {
			return nil, "", u.release(route.err, ep)
		}
		addr = route.addr
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, "", u.release(route.dialError(err), ep)
	}
	if limits != nil {
		nc = &slotConn{Conn: nc, limits: limits, addr: ep.Addr}
	}
	if route != nil && tunnels(ep, alpn) {
		if err := route.connect(nc, ep, deadline); err != nil {
			nc.Close()
			return nil, "", err
		}
	}
	if ep.Scheme != "https" {
		return nc, "", nil
	}
	tc, err := u.handshake(ctx, ep, newRecConn(nc), deadline, alpn)
	if err != nil {
		nc.Close()
		return nil, "", err
	}
	return tc, tc.ConnectionState().NegotiatedProtocol, nil
}

// release gives back the connection slot a failed dial to ep took, and
// returns err.
func (u *userDial) release(err error, ep *Endpoint) error {
	if u.sh.limits != nil {
		u.sh.limits.release(ep.Addr)
	}
	return err
}

// slotConn gives back its max_connections_per_host slot when closed.
type slotConn struct {
	net.Conn
	limits *hostLimits
	addr   string
	closed atomic.Bool
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.limits.release(c.addr)
	}
	return err
}

// SyscallConn keeps H1's socket look and raw writes working through the
// wrapper.
func (c *slotConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// rawConnOf is the socket under nc, for looks that must not consume
// anything (nil when there is none).
func rawConnOf(nc net.Conn) syscall.RawConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
