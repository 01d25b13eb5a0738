package httpc

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// testCerts is httptest's certificate, for want of our own.
func testCerts(t *testing.T) []tls.Certificate {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	defer srv.Close()
	return srv.TLS.Certificates
}

// tlsServer is a crypto/tls server on loopback whose connections are
// served by serve, one goroutine each. It counts connections and
// resumed handshakes.
type tlsServer struct {
	addr             string
	conns, resumed   atomic.Int32
	handshakeOK      atomic.Int32
	serve            func(tc *tls.Conn, br *bufio.Reader)
	wg               sync.WaitGroup
	versionsSeen     sync.Map
	negotiatedProtos sync.Map
}

func startTLSServer(t *testing.T, cfg *tls.Config, serve func(tc *tls.Conn, br *bufio.Reader)) *tlsServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Certificates == nil {
		cfg.Certificates = testCerts(t)
	}
	s := &tlsServer{addr: ln.Addr().String(), serve: serve}
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				tc := tls.Server(c, cfg)
				if tc.Handshake() != nil {
					return
				}
				s.handshakeOK.Add(1)
				cs := tc.ConnectionState()
				if cs.DidResume {
					s.resumed.Add(1)
				}
				s.versionsSeen.Store(cs.Version, true)
				s.negotiatedProtos.Store(cs.NegotiatedProtocol, true)
				s.serve(tc, bufio.NewReader(tc))
			}()
		}
	}()
	return s
}

// readRequest reads one request head (our requests carry no body here).
func readRequest(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			return nil
		}
	}
}

// answerAll answers every request with "ok".
func answerAll(tc *tls.Conn, br *bufio.Reader) {
	for readRequest(br) == nil {
		if _, err := io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

func httpsEP(addr string) *Endpoint {
	return &Endpoint{Scheme: "https", Addr: addr, Host: "x"}
}

func insecure() Options { return Options{TLS: &tls.Config{InsecureSkipVerify: true}} }

// TestHTTPSUsersOwnConnections: HTTPS HTTP/1.1 goes through the lean
// client, each user over its own kept connection, as plain HTTP does.
// Before, every user shared net/http's one pool.
func TestHTTPSUsersOwnConnections(t *testing.T) {
	srv := startTLSServer(t, &tls.Config{NextProtos: []string{"http/1.1"}}, answerAll)
	sh := NewShared(insecure())
	defer sh.Close()
	ep := httpsEP(srv.addr)
	for u := 0; u < 3; u++ {
		tr := sh.NewTransport()
		for i := 0; i < 4; i++ {
			var resp Response
			if err := tr.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 || string(resp.Body) != "ok" {
				t.Fatalf("user %d request %d: err %v status %d body %d", u, i, err, resp.Status, resp.BodyLen)
			}
		}
		defer tr.Close()
	}
	if n := srv.conns.Load(); n != 3 {
		t.Errorf("3 users × 4 kept-alive requests opened %d connections, want 3", n)
	}
	if _, ok := srv.negotiatedProtos.Load("http/1.1"); !ok {
		t.Errorf("ALPN did not settle on http/1.1")
	}
}

// TestHTTPSResumesPerUser: a user's later connections resume its earlier
// TLS session, as a browser's do, and another user's do not (each has
// its own cache); the result's tls block counts both kinds.
func TestHTTPSResumesPerUser(t *testing.T) {
	for _, ver := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		srv := startTLSServer(t, &tls.Config{MaxVersion: ver}, answerAll)
		o := insecure()
		o.NewConnPerRequest = true
		sh := NewShared(o)
		ep := httpsEP(srv.addr)
		for u := 0; u < 2; u++ {
			tr := sh.NewTransport()
			for i := 0; i < 3; i++ {
				var resp Response
				if err := tr.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 {
					t.Fatalf("TLS %x user %d request %d: %v %d", ver, u, i, err, resp.Status)
				}
			}
			tr.Close()
		}
		sh.Close()
		if c, r := srv.conns.Load(), srv.resumed.Load(); c != 6 || r != 4 {
			t.Errorf("TLS %x: 2 users × 3 connections: %d connections, %d resumed, want 6 and 4 (each user's first is full)", ver, c, r)
		}
		st := sh.TLS()
		if st == nil || st.Full != 2 || st.Resumed != 4 || st.Handshakes != 6 || st.Failed != 0 || st.Duration.Count != 6 {
			t.Errorf("TLS %x: stats %+v, want 2 full, 4 resumed, 6 timed", ver, st)
		}
	}
}

// waitReadable waits (bounded) until the client's socket under hc has
// bytes or a close waiting, so a test's look happens after the server's
// bytes arrived, whatever the machine's load.
func waitReadable(t *testing.T, hc *h1conn) {
	t.Helper()
	rc := rawConnOf(hc.nc)
	var one [1]byte
	for i := 0; i < 2000; i++ {
		ready := false
		rc.Read(func(fd uintptr) bool {
			_, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			ready = err != syscall.EAGAIN
			return true
		})
		if ready {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the server's bytes never arrived")
}

// TestTLSLookTakesTicket: a TLS 1.3 server sends its session tickets
// after the handshake; they wait on the socket of a connection that has
// sent nothing yet. A look must take them in (they are no answer's bytes)
// and find the connection idle; a raw look at the socket took them for
// stray data and threw away a good connection.
func TestTLSLookTakesTicket(t *testing.T) {
	srv := startTLSServer(t, &tls.Config{MinVersion: tls.VersionTLS13}, answerAll)
	c := NewH1()
	defer c.Close()
	ep := httpsEP(srv.addr)
	c.ud.sh = NewShared(insecure())
	hc, err := c.conn(ep, time.Now(), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The tickets come in their own time: look until the user's session
	// cache holds one (bounded), each look finding the connection idle.
	cache := c.ud.cache
	for i := 0; ; i++ {
		if got := hc.peek(); got != peekIdle {
			t.Fatalf("look %d with session tickets arriving: %v, want idle", i, got)
		}
		if _, ok := cache.Get(serverName(c.ud.sh.tlsBase, ep)); ok {
			break
		}
		if i == 2000 {
			t.Fatal("no session ticket was taken in by the looks")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 {
		t.Fatalf("request after the look: %v %d", err, resp.Status)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1: the connection with the ticket was dropped", n)
	}
}

// TestTLSCloseNotifyWhileIdle: a server that ends an idle kept connection
// with close_notify (and keeps the TCP connection half open) is found
// closed by the look before reuse; the next request goes on a new
// connection and succeeds.
func TestTLSCloseNotifyWhileIdle(t *testing.T) {
	srv := startTLSServer(t, &tls.Config{}, func(tc *tls.Conn, br *bufio.Reader) {
		if readRequest(br) != nil {
			return
		}
		io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		tc.CloseWrite()
		// Half open: the socket shows only the alert, not a TCP close.
		io.Copy(io.Discard, br)
	})
	oldRecheck := recheckAfter
	recheckAfter = 0
	defer func() { recheckAfter = oldRecheck }()
	c := NewH1()
	c.ud.sh = NewShared(insecure())
	defer c.Close()
	ep := httpsEP(srv.addr)
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 {
		t.Fatalf("first request: %v", err)
	}
	if len(c.conns) == 1 {
		waitReadable(t, c.conns[0])
	}
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 {
		t.Fatalf("request after close_notify: %v (class %v)", err, Classify(err))
	}
	if n := srv.conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// flushConn holds a server's writes until flush, so two TLS records go
// out in one TCP write and reach the client's tls.Conn together.
type flushConn struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
	on  bool
}

func (f *flushConn) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		f.buf = append(f.buf, p...)
		return len(p), nil
	}
	return f.Conn.Write(p)
}

func (f *flushConn) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.on = false
	f.Conn.Write(f.buf)
	f.buf = nil
}

// TestTLSStrayRecordAfterAnswer: a server whose answer is followed by a
// second record of application data in the same TCP segment. The client's
// tls.Conn reads both records off the socket, the answer is parsed from
// the first, and the socket is then empty: a raw look saw an idle
// connection and the next request read the stray record as its answer.
// The look through tls.Conn fails the guilty answer, as on plain HTTP.
func TestTLSStrayRecordAfterAnswer(t *testing.T) {
	certs := testCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				fc := &flushConn{Conn: c}
				tc := tls.Server(fc, &tls.Config{Certificates: certs})
				br := bufio.NewReader(tc)
				// A sound first answer, so the looks have found the
				// connection clean before the second.
				if readRequest(br) != nil {
					return
				}
				io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				for readRequest(br) == nil {
					fc.mu.Lock()
					fc.on = true
					fc.mu.Unlock()
					io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					io.WriteString(tc, "HTTP/1.1 599 Stray\r\nContent-Length: 0\r\n\r\n")
					fc.flush()
				}
			}()
		}
	}()
	c := NewH1()
	c.ud.sh = NewShared(insecure())
	defer c.Close()
	ep := httpsEP(ln.Addr().String())
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || len(c.conns) != 1 || c.conns[0].rec.dirty {
		t.Fatalf("first answer: %v, or its connection not kept clean", err)
	}
	err = c.RoundTrip(get(ep, "/"), &resp)
	if !errors.Is(err, errMalformed) || Classify(err) != sample.Other {
		t.Fatalf("answer followed by a stray record: %v (class %v), want the malformed-answer error", err, Classify(err))
	}
	if len(c.conns) != 0 {
		t.Errorf("the connection with the stray record was kept")
	}
	if err := c.RoundTrip(get(ep, "/"), &resp); err == nil && resp.Status == 599 {
		t.Errorf("the next request read the stray record as its answer")
	}
}

// silentServer accepts connections and never speaks: a TLS handshake to
// it waits for the server's first flight forever.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestTLSHandshakeBounded: a handshake ends at the request's deadline
// (class timeout, counted as a failed handshake) and at once on
// Interrupt.
func TestTLSHandshakeBounded(t *testing.T) {
	ep := httpsEP(silentServer(t))
	sh := NewShared(insecure())
	defer sh.Close()
	tr := sh.NewTransport()
	defer tr.Close()
	var resp Response
	req := get(ep, "/")
	req.Timeout = 200 * time.Millisecond
	if err := tr.RoundTrip(req, &resp); Classify(err) != sample.Timeout {
		t.Errorf("handshake past the deadline: %v (class %v), want timeout", err, Classify(err))
	}
	if st := sh.TLS(); st == nil || st.Failed != 1 || st.Handshakes != 0 {
		t.Errorf("stats %+v, want one failed handshake", st)
	}
	done := make(chan error, 1)
	go func() {
		req := get(ep, "/")
		req.Timeout = time.Hour
		var resp Response
		done <- tr.RoundTrip(req, &resp)
	}()
	waitForStack(t, "crypto/tls.(*Conn).clientHandshake", done)
	tr.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("interrupted handshake: %v, want ErrInterrupted", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Interrupt did not end the handshake")
	}
}

// TestTLSSlotFreedOnClose: under max_connections_per_host a closed HTTPS
// connection gives its slot back, so users take turns.
func TestTLSSlotFreedOnClose(t *testing.T) {
	srv := startTLSServer(t, &tls.Config{}, answerAll)
	o := insecure()
	o.MaxConnsPerHost = 1
	sh := NewShared(o)
	defer sh.Close()
	ep := httpsEP(srv.addr)
	for u := 0; u < 3; u++ {
		tr := sh.NewTransport()
		var resp Response
		req := get(ep, "/")
		req.Timeout = 5 * time.Second
		if err := tr.RoundTrip(req, &resp); err != nil {
			t.Fatalf("user %d: %v", u, err)
		}
		tr.Close()
	}
	if !strings.Contains(srv.addr, "127.0.0.1") || srv.conns.Load() != 3 {
		t.Errorf("%d connections, want 3", srv.conns.Load())
	}
}

// TestTLSStrayBytesLeftInsideTLS: an answer whose last byte ends exactly
// where the client's read buffer was filled, followed by stray bytes in
// the same TLS record. crypto/tls keeps those decrypted bytes back; the
// socket is empty and the read buffer holds nothing, so only a look
// through tls.Conn finds them. The answer fails as on plain HTTP.
func TestTLSStrayBytesLeftInsideTLS(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Length: "
	// Header and body together fill two 4096-byte reads exactly.
	const total = 2 * 4096
	var answer string
	for n := total - len(head) - 8; ; n++ {
		h := head + strconv.Itoa(n) + "\r\n\r\n"
		if len(h)+n == total {
			answer = h + strings.Repeat("b", n)
			break
		}
	}
	srv := startTLSServer(t, &tls.Config{DynamicRecordSizingDisabled: true}, func(tc *tls.Conn, br *bufio.Reader) {
		// A sound first answer, so the connection's looks have found it
		// clean before the second.
		if readRequest(br) != nil {
			return
		}
		io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		for readRequest(br) == nil {
			// One Write: one record of the answer and the stray bytes.
			if _, err := io.WriteString(tc, answer+"HTTP/1.1 599 Stray\r\n\r\n"); err != nil {
				return
			}
		}
	})
	c := NewH1()
	c.ud.sh = NewShared(insecure())
	defer c.Close()
	ep := httpsEP(srv.addr)
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatalf("first answer: %v", err)
	}
	if len(c.conns) != 1 || c.conns[0].rec.dirty {
		t.Fatalf("after a sound answer the connection is not kept clean")
	}
	err := c.RoundTrip(get(ep, "/"), &resp)
	if !errors.Is(err, errMalformed) {
		t.Fatalf("answer followed by stray bytes in its record: %v (body %d), want the malformed-answer error", err, resp.BodyLen)
	}
}

// TestHTTPSFramingRules: over TLS the lean client judges answers by the
// same rules as over plain TCP: each framing case of issue 27 ends as it
// does there (the same error or the same body length).
func TestHTTPSFramingRules(t *testing.T) {
	for _, c := range framingCases {
		srv := startTLSServer(t, &tls.Config{}, func(tc *tls.Conn, br *bufio.Reader) {
			for readRequest(br) == nil {
				if _, err := io.WriteString(tc, c.raw); err != nil || c.end != nil {
					return
				}
			}
		})
		sh := NewShared(insecure())
		tr := sh.NewTransport()
		var resp Response
		req := get(httpsEP(srv.addr), "/")
		req.Timeout = 5 * time.Second
		err := tr.RoundTrip(req, &resp)
		tr.Close()
		sh.Close()
		checkFraming(t, c.name+" (HTTPS)", err, resp.BodyLen, c.wantErr, c.bodyLen)
	}
}

// TestALPNRouting: against a server that speaks both, version auto hands
// the connection whose handshake chose h2 to the user's HTTP/2 client
// (the first request goes on that very connection: one connection for
// every request, nothing sent twice), and version http/1.1 offers only
// http/1.1.
func TestALPNRouting(t *testing.T) {
	var requests, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		io.WriteString(w, r.Proto)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ep := httpsEP(strings.TrimPrefix(srv.URL, "https://"))
	for _, c := range []struct {
		proto Protocol
		want  string
	}{{ProtoAuto, "HTTP/2.0"}, {ProtoHTTP1, "HTTP/1.1"}} {
		requests.Store(0)
		conns.Store(0)
		o := insecure()
		o.Protocol = c.proto
		sh := NewShared(o)
		tr := sh.NewTransport()
		for i := 0; i < 3; i++ {
			var resp Response
			if err := tr.RoundTrip(get(ep, "/"), &resp); err != nil || string(resp.Body) != c.want {
				t.Fatalf("protocol %d request %d: %v, body %q, want %q", c.proto, i, err, resp.Body, c.want)
			}
		}
		tr.Close()
		sh.Close()
		if requests.Load() != 3 || conns.Load() != 1 {
			t.Errorf("protocol %d: the server saw %d requests on %d connections, want 3 on 1", c.proto, requests.Load(), conns.Load())
		}
	}
}
