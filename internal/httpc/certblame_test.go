package httpc

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// resetAfterHandshake serves TLS that asks for a client certificate only
// if the client has one, completes every handshake without one, and then
// resets the connection before any answer: a server that is down or
// overloaded, not one refusing us for want of a certificate.
func resetAfterHandshake(t *testing.T, ver uint16, alpn []string) string {
	t.Helper()
	// httptest's certificate, for want of our own.
	certSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	certSrv.StartTLS()
	certs := certSrv.TLS.Certificates
	certSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg := &tls.Config{Certificates: certs, ClientAuth: tls.RequestClientCert, MinVersion: ver, MaxVersion: ver, NextProtos: alpn}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := tls.Server(c, cfg)
				tc.SetDeadline(time.Now().Add(10 * time.Second))
				if tc.Handshake() == nil {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestOptionalClientCertResetNotBlamed: a TLS 1.2 server that asks for a
// client certificate only optionally and resets every connection after
// the handshake, never answering, has refused nothing: its failures are
// conn_reset. Before, having asked and never answered made every one tls,
// "dropped the connection for want of a certificate". (TLS 1.3 is not
// covered: there the client cannot tell this server from one refusing;
// see certwatch.go.)
func TestOptionalClientCertResetNotBlamed(t *testing.T) {
	for _, ver := range []uint16{tls.VersionTLS12} {
		for _, alpn := range [][]string{nil, {"h2", "http/1.1"}} {
			addr := resetAfterHandshake(t, ver, alpn)
			ep := &Endpoint{Scheme: "https", Addr: addr, Host: "x"}
			sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}})
			tr := sh.NewTransport()
			for i := 0; i < 5; i++ {
				var resp Response
				err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second}, &resp)
				// HTTP/2's own "client conn could not be established" is
				// other; what matters is that nothing is tls.
				if got := Classify(err); got != sample.ConnReset && got != sample.Other {
					t.Errorf("TLS %x, ALPN %v, request %d: class %v (%v), want conn_reset", ver, alpn, i, got, err)
				}
			}
			tr.Close()
			sh.Close()
		}
	}
}
