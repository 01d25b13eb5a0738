package httpc

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// goH2 is Go's own HTTP/2 server, h2c or over TLS, counting connections.
func goH2(t *testing.T, useTLS bool, h http.HandlerFunc) (*Endpoint, *atomic.Int64) {
	return goH2With(t, useTLS, h, nil)
}

// goH2With is goH2 with the server's configuration adjusted by conf.
func goH2With(t *testing.T, useTLS bool, h http.HandlerFunc, conf func(*http.Server)) (*Endpoint, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	if conf != nil {
		conf(srv.Config)
	}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if useTLS {
		srv.EnableHTTP2 = true
		srv.StartTLS()
		t.Cleanup(srv.Close)
		addr := srv.Listener.Addr().String()
		conf := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		return &Endpoint{Scheme: "https", Addr: addr, Host: addr, TLS: conf}, &conns
	}
	var pr http.Protocols
	pr.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &pr
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return &Endpoint{Scheme: "http", Addr: addr, Host: addr}, &conns
}

// testH2 is one user's HTTP/2 client as a run makes it, with the run's
// options, dialing through the user's dialer.
func testH2(t testing.TB, ep *Endpoint, o Options) *H2 {
	o.TLS = ep.TLS
	sh := NewShared(o)
	m := sh.NewTransport()
	t.Cleanup(func() {
		m.Close()
		sh.Close()
	})
	return m.h2.(*H2)
}

func h2get(ep *Endpoint, path string) *Request {
	return &Request{Method: "GET", Endpoint: ep, PathQuery: []byte(path), Timeout: 10 * time.Second, KeepBody: true}
}

// TestH2RoundTrip: requests, headers, bodies both ways (bigger than the
// server's initial window, so flow control matters), trailers and
// content-length, over h2c and TLS, all on one connection per user.
func TestH2RoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640 KB
	for _, useTLS := range []bool{false, true} {
		ep, conns := goH2(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				http.Error(w, "not h2", 500)
				return
			}
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Method", r.Method)
			w.Header().Set("X-Host", r.Host)
			w.Header().Set("X-Got", r.Header.Get("X-Token"))
			w.Header().Set("X-Conn", r.Header.Get("Connection"))
			w.Header().Set("Trailer", "X-Sum")
			switch r.URL.Path {
			case "/echo":
				w.Write(body)
			case "/big":
				w.Write(big)
			default:
				io.WriteString(w, "hello")
			}
			w.Header().Set("X-Sum", "done")
		})
		c := testH2(t, ep, Options{})
		var resp Response
		for i := 0; i < 3; i++ {
			req := h2get(ep, "/")
			req.Header = []Field{{Name: []byte("X-Token"), Value: []byte("abc")}, {Name: []byte("Connection"), Value: []byte("keep-alive")}}
			if err := c.RoundTrip(req, &resp); err != nil {
				t.Fatalf("tls %v: %v", useTLS, err)
			}
			if resp.Status != 200 || string(resp.Body) != "hello" || string(resp.Get("X-Got")) != "abc" || string(resp.Get("X-Host")) != ep.Host || len(resp.Get("X-Conn")) != 0 {
				t.Fatalf("tls %v: %d %q %q", useTLS, resp.Status, resp.Body, resp.Header)
			}
		}
		post := &Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/echo"), Body: big, Timeout: 10 * time.Second, KeepBody: true}
		if err := c.RoundTrip(post, &resp); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resp.Body, big) || resp.BodyLen != int64(len(big)) {
			t.Fatalf("tls %v: echo of %d bytes came back as %d (%d kept)", useTLS, len(big), resp.BodyLen, len(resp.Body))
		}
		if err := c.RoundTrip(h2get(ep, "/big"), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.BodyLen != int64(len(big)) {
			t.Fatalf("big body: %d bytes", resp.BodyLen)
		}
		if got := conns.Load(); got != 1 {
			t.Errorf("tls %v: 5 requests of one user opened %d connections, want 1", useTLS, got)
		}
		c.Close()
		if len(c.conns) != 0 {
			t.Errorf("Close left %d connections", len(c.conns))
		}
	}
}

// TestH2KeptBodyCap: KeepBody keeps at most MaxKeptBody bytes; BodyLen is
// the whole body.
func TestH2KeptBodyCap(t *testing.T) {
	ep, _ := goH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 100000))
	})
	c := testH2(t, ep, Options{MaxKeptBody: 1000})
	defer c.Close()
	var resp Response
	if err := c.RoundTrip(h2get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Body) != 1000 || resp.BodyLen != 100000 || !resp.Cut() {
		t.Fatalf("kept %d of %d", len(resp.Body), resp.BodyLen)
	}
	req := h2get(ep, "/")
	req.KeepBody, req.KeepHead = false, 10
	if err := c.RoundTrip(req, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Body) != 10 || resp.BodyLen != 100000 {
		t.Fatalf("KeepHead 10 kept %d of %d", len(resp.Body), resp.BodyLen)
	}
}

// TestH2Timeout: a request past its deadline fails as a timeout, and its
// connection is dropped.
func TestH2Timeout(t *testing.T) {
	release := make(chan struct{})
	ep, _ := goH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := testH2(t, ep, Options{})
	defer c.Close()
	req := h2get(ep, "/")
	req.Timeout = 50 * time.Millisecond
	var resp Response
	err := c.RoundTrip(req, &resp)
	if Classify(err) != sample.Timeout {
		t.Fatalf("got %v (%v), want a timeout", err, Classify(err))
	}
	if len(c.conns) != 0 {
		t.Fatalf("a timed-out connection was kept")
	}
}

// TestH2Interrupt: Interrupt from another goroutine cuts off the request
// in flight, and later ones fail at once.
func TestH2Interrupt(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	ep, _ := goH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := testH2(t, ep, Options{})
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		var resp Response
		req := h2get(ep, "/")
		req.Timeout = time.Minute
		done <- c.RoundTrip(req, &resp)
	}()
	<-started
	c.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("got %v, want ErrInterrupted", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Interrupt did not cut off the request")
	}
	var resp Response
	if err := c.RoundTrip(h2get(ep, "/"), &resp); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("a request after Interrupt: %v", err)
	}
}

// TestH2HeaderCap: an answer whose header block decodes past
// MaxHeaderBytes fails with H1's message.
func TestH2HeaderCap(t *testing.T) {
	ep, _ := goH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("v", 3000))
	})
	c := testH2(t, ep, Options{MaxHeaderBytes: 2048})
	defer c.Close()
	var resp Response
	err := c.RoundTrip(h2get(ep, "/"), &resp)
	if err == nil || !strings.Contains(err.Error(), "response header block longer than 2048 bytes") || Classify(err) != sample.Other {
		t.Fatalf("got %v", err)
	}
}
