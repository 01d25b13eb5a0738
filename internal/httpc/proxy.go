package httpc

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// A proxy between the users and the target: plain-http requests go to it
// in absolute form (GET http://host/path) on connections to the proxy;
// https, and HTTP/2 with prior knowledge, go through a CONNECT tunnel,
// with TLS to the origin inside it as on a direct connection. Which
// endpoints a proxy takes is Options.Proxy's to say (the plan's rule:
// HTTP_PROXY, HTTPS_PROXY, NO_PROXY or http.proxy), asked once per
// endpoint.

// ErrProxy is a request the proxy refused: it asked for authentication
// (407), or answered CONNECT with anything but 2xx, or the proxy setting
// cannot be used.
var ErrProxy = errors.New("proxy refused")

// proxyRoute is how one endpoint's connections reach it through a proxy.
type proxyRoute struct {
	addr string // the proxy's host:port
	// auth is the Proxy-Authorization value from the proxy URL's userinfo
	// ("" without one).
	auth string
	// err is a proxy setting this endpoint cannot use; each of its
	// requests fails with it.
	err error
}

// route is the proxy ep's connections go through (nil: direct), asked of
// Options.Proxy on the endpoint's first dial and kept.
func (s *Shared) route(ep *Endpoint) *proxyRoute {
	if s.opts.Proxy == nil {
		return nil
	}
	if r, ok := s.routes.Load(ep); ok {
		return r.(*proxyRoute)
	}
	r := newRoute(s.opts.Proxy(ep.Scheme, ep.Host))
	s.routes.Store(ep, r)
	return r
}

func newRoute(u *url.URL, err error) *proxyRoute {
	switch {
	case err != nil:
		return &proxyRoute{err: fmt.Errorf("%w: the proxy setting cannot be used: %v", ErrProxy, err)}
	case u == nil:
		return nil
	case u.Scheme != "http":
		return &proxyRoute{err: fmt.Errorf("%w: a %s:// proxy is not supported (only http://)", ErrProxy, u.Scheme)}
	}
	r := &proxyRoute{addr: u.Host}
	if u.Port() == "" {
		r.addr = net.JoinHostPort(u.Hostname(), "80")
	}
	if u.User != nil {
		pw, _ := u.User.Password()
		r.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw))
	}
	return r
}

// tunnels reports whether a connection to ep through a proxy needs a
// CONNECT tunnel: https, or plain http dialed for HTTP/2 with prior
// knowledge (the HTTP/2 client dials plain http offering no ALPN, where
// the HTTP/1.1 client offers http/1.1).
func tunnels(ep *Endpoint, alpn []string) bool {
	return ep.Scheme == "https" || alpn == nil
}

// dialError names the proxy in a failed dial to it, keeping the cause
// (and so its class: a refused proxy is conn_refused).
func (r *proxyRoute) dialError(err error) error {
	if r == nil {
		return err
	}
	return fmt.Errorf("proxy %s: %w", r.addr, err)
}

// connect opens a tunnel to ep through the proxy on nc, bounded by
// deadline. A refusal is ErrProxy with the proxy's status line.
func (r *proxyRoute) connect(nc net.Conn, ep *Endpoint, deadline time.Time) error {
	// It fails only on a closed socket, whose write fails too.
	_ = nc.SetDeadline(deadline)
	b := make([]byte, 0, 128+len(r.auth))
	b = append(b, "CONNECT "...)
	b = append(b, ep.Addr...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, ep.Addr...)
	b = append(b, "\r\n"...)
	if r.auth != "" {
		b = append(b, "Proxy-Authorization: "...)
		b = append(b, r.auth...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	if _, err := nc.Write(b); err != nil {
		return r.dialError(err)
	}
	br := bufio.NewReaderSize(nc, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return r.dialError(err)
	}
	// The body of a refusal is the proxy's page, never read: the
	// connection is closed.
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: proxy %s answered CONNECT %s with %s", ErrProxy, r.addr, ep.Addr, resp.Status)
	}
	if br.Buffered() > 0 {
		return fmt.Errorf("%w: proxy %s sent bytes after its CONNECT answer, before the origin spoke", ErrProxy, r.addr)
	}
	_ = nc.SetDeadline(time.Time{})
	return nil
}

// errProxyAuth is a plain-http request the proxy answered 407.
func errProxyAuth(r *proxyRoute) error {
	if r.auth == "" {
		return fmt.Errorf("%w: proxy %s asked for authentication (407): put user:password@ in the proxy URL", ErrProxy, r.addr)
	}
	return fmt.Errorf("%w: proxy %s refused the credentials in the proxy URL (407)", ErrProxy, r.addr)
}

// ioError names the proxy in a read or write error on a connection
// through it (a tunnel cut mid-answer reads as a bare reset or EOF
// otherwise), keeping the cause and so its class.
// A malformed answer is the origin's, not the tunnel's, and is left as
// it is.
func (r *proxyRoute) ioError(err error) error {
	if r == nil || err == nil || errors.Is(err, ErrProxy) || errors.Is(err, ErrInterrupted) {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrServerClosed) {
		return fmt.Errorf("proxy %s: %w", r.addr, err)
	}
	return err
}
