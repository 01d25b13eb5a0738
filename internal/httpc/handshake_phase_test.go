package httpc

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// slowHandshakeServer answers 200 over TLS (HTTP/2 by ALPN when h2),
// taking at least hold in each handshake: each ClientHello is looked at
// slowly. The config is set before the server starts, which reads it.
func slowHandshakeServer(t *testing.T, hold time.Duration, h2 bool) *Endpoint {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.EnableHTTP2 = h2
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		time.Sleep(hold)
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &Endpoint{Scheme: "https", Addr: strings.TrimPrefix(srv.URL, "https://"), Host: "example.com"}
}

// The TLS handshake of a connection opened for a request is told apart
// (Response.Handshake), so a latency from the send can leave it out, as
// numbers.md says: it is a phase of its own, counted in the tls block.
// A request on the kept connection after it had none. Before, nothing
// told the handshake apart, and the first request of every connection
// carried it in its latency.
func TestResponseTellsTheHandshakeApart(t *testing.T) {
	const hold = 50 * time.Millisecond
	for _, h2 := range []bool{false, true} {
		ep := slowHandshakeServer(t, hold, h2)
		sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}})
		tr := sh.NewTransport()
		var resp Response
		for i := range 2 {
			if err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second}, &resp); err != nil {
				t.Fatalf("h2 %v, request %d: %v", h2, i, err)
			}
			switch {
			case i == 0 && resp.Handshake < hold:
				t.Errorf("h2 %v: the first request's handshake %v, want at least the server's %v", h2, resp.Handshake, hold)
			case i == 1 && resp.Handshake != 0:
				t.Errorf("h2 %v: a request on the kept connection had a handshake of %v", h2, resp.Handshake)
			}
		}
		tr.Close()
		sh.Close()
	}
}
