package httpc

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

// TestTLSAlertIsTLS: a server that demands a client certificate answers
// with a TLS alert (handshake_failure in TLS 1.2, certificate_required in
// 1.3, where it arrives after the client thinks the handshake is done).
// Whether the request went over HTTP/2 or HTTP/1.1, or over a bare TLS
// connection as the WebSocket dialer's does, the failure is `tls`.
func TestTLSAlertIsTLS(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		for _, ver := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			srv.EnableHTTP2 = h2
			srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert, MaxVersion: ver}
			// The server's own log line about the failed handshake is noise.
			srv.Config.ErrorLog = quietLog()
			srv.StartTLS()
			what := map[uint16]string{tls.VersionTLS12: "TLS 1.2", tls.VersionTLS13: "TLS 1.3"}[ver]
			if h2 {
				what += " with HTTP/2"
			}
			ep := &Endpoint{Scheme: "https", Addr: strings.TrimPrefix(srv.URL, "https://"), Host: "x"}

			sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}})
			tr := sh.NewTransport()
			var resp Response
			err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 5 * time.Second}, &resp)
			// In TLS 1.3 the alert comes after the client has finished its
			// handshake, and HTTP/2's first writes may meet the server's
			// close before the alert is read (a broken pipe, or "client
			// conn could not be established"): still tls, since the
			// server asked for the certificate we did not have.
			if got := Classify(err); got != sample.TLS {
				t.Errorf("%s, net/http: class %v for %v, want tls", what, got, err)
			}
			tr.Close()
			sh.Close()

			c, err := tls.Dial("tcp", ep.Addr, &tls.Config{InsecureSkipVerify: true})
			if err == nil {
				_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
				if err == nil {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					_, err = c.Read(make([]byte, 10))
				}
				c.Close()
			}
			if got := Classify(err); got != sample.TLS {
				t.Errorf("%s, bare TLS connection: class %v for %v, want tls", what, got, err)
			}
			srv.Close()
		}
	}
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// TestClientCertStillSent: watching for certificate requests must not stop
// a configured client certificate from being sent.
func TestClientCertStillSent(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(500)
		}
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.StartTLS()
	defer srv.Close()
	ep := &Endpoint{Scheme: "https", Addr: strings.TrimPrefix(srv.URL, "https://"), Host: "x"}
	sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true, Certificates: srv.TLS.Certificates}})
	defer sh.Close()
	var resp Response
	if err := sh.NewTransport().RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 5 * time.Second}, &resp); err != nil || resp.Status != 200 {
		t.Fatalf("with a client certificate: err %v, status %d", err, resp.Status)
	}
}

// TestTLSAlertManyUsers: ten users sharing HTTP/2 connections to a TLS 1.3
// server that wants a client certificate. Requests that share or wait for
// a refused connection fail with "client conn could not be established",
// "force closed" or a broken pipe, never reading the alert; each is still
// tls. Before, about one in ten was other or conn_reset.
func TestTLSAlertManyUsers(t *testing.T) {
	url := hostile.ClientCertRequired(t, tls.VersionTLS13)
	ep := &Endpoint{Scheme: "https", Addr: strings.TrimPrefix(url, "https://"), Host: "x"}
	sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}})
	defer sh.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	byClass := map[sample.Class][]string{}
	for u := 0; u < 10; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := sh.NewTransport()
			for i := 0; i < 15; i++ {
				var resp Response
				err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second}, &resp)
				mu.Lock()
				byClass[Classify(err)] = append(byClass[Classify(err)], fmt.Sprint(err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if n := len(byClass[sample.TLS]); n != 150 {
		for c, errs := range byClass {
			if c != sample.TLS {
				t.Errorf("%d requests %v, e.g. %s", len(errs), c, errs[0])
			}
		}
	}
}

// TestOptionalClientCertNotBlamed: a server that asks for a client
// certificate but serves without one is not refusing: once it has
// answered, a connection it resets is conn_reset, not tls.
func TestOptionalClientCertNotBlamed(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				if tc, ok := c.(*tls.Conn); ok {
					tc.NetConn().(*net.TCPConn).SetLinger(0)
					tc.NetConn().Close()
				}
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()
	ep := &Endpoint{Scheme: "https", Addr: strings.TrimPrefix(srv.URL, "https://"), Host: "x"}
	sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}})
	defer sh.Close()
	tr := sh.NewTransport()
	var resp Response
	if err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 5 * time.Second}, &resp); err != nil || resp.Status != 200 {
		t.Fatalf("optional certificate: err %v, status %d", err, resp.Status)
	}
	err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/reset"), Timeout: 5 * time.Second}, &resp)
	if got := Classify(err); got == sample.TLS || got == sample.OK {
		t.Errorf("reset by a server that serves without a certificate: class %v (%v), want not tls", got, err)
	}
}
