package httpc

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"time"
)

// userSessions is how many servers' TLS sessions a user remembers: a
// user talks to a few hosts, and a browser's cache per host is what
// resumption needs.
const userSessions = 8

// handshake runs the TLS handshake of a user's fresh connection, bounded
// by deadline and by ctx (Interrupt), and records it in the run's TLS
// stats. A failure that the server's want of a client certificate
// explains is blamed on it (certwatch.go).
func (u *userDial) handshake(ctx context.Context, ep *Endpoint, nc net.Conn, deadline time.Time, alpn []string) (*tls.Conn, error) {
	tc := tls.Client(nc, u.config(ep, alpn))
	cctx, creq := u.sh.cw.contextFrom(ctx, ep.Addr)
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		cctx, cancel = context.WithDeadline(cctx, deadline)
		defer cancel()
	}
	// It fails only on a closed socket, whose handshake fails too.
	_ = nc.SetDeadline(deadline)
	began := time.Now()
	err := tc.HandshakeContext(cctx)
	took := time.Since(began)
	if err != nil {
		u.sh.tlsStats.failed()
		return nil, u.sh.cw.blame(ep.Addr, handshakeError(ctx, err))
	}
	// It fails only on a closed socket, which the first request finds.
	_ = nc.SetDeadline(time.Time{})
	cs := tc.ConnectionState()
	u.sh.cw.handshakeDone(creq, cs.Version)
	u.sh.tlsStats.done(cs.DidResume, took)
	u.handshook.Add(int64(took))
	return tc, nil
}

// handshakeError says why a handshake that ctx cut off failed: an
// interrupt, not the connection's fault.
func handshakeError(ctx context.Context, err error) error {
	if ctx.Err() == context.Canceled {
		return ErrInterrupted
	}
	return err
}

// config is the user's TLS config for ep offering alpn: the run's, with
// the user's own session cache (so its later connections resume, as a
// browser's do) made at its first handshake. One clone is kept per server
// name and ALPN list the user has dialed.
func (u *userDial) config(ep *Endpoint, alpn []string) *tls.Config {
	name := serverName(u.sh.tlsBase, ep)
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.cfgs {
		if c.ServerName == name && slices.Equal(c.NextProtos, alpn) {
			return c
		}
	}
	if u.cache == nil {
		u.cache = tls.NewLRUClientSessionCache(userSessions)
	}
	c := u.sh.tlsBase.Clone()
	c.NextProtos = alpn
	c.ServerName = name
	c.ClientSessionCache = u.cache
	u.cfgs = append(u.cfgs, c)
	return c
}

// serverName is the name the handshake verifies and sends as SNI: the
// run's when set, else the host of the address dialed (as net/http did).
func serverName(base *tls.Config, ep *Endpoint) string {
	if base.ServerName != "" {
		return base.ServerName
	}
	host, _, err := net.SplitHostPort(ep.Addr)
	if err != nil {
		return ep.Addr
	}
	return host
}
