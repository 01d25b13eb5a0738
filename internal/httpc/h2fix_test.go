package httpc

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawH2 is a scripted h2c server on loopback: it reads the preface, writes
// initial as its SETTINGS, acks the client's SETTINGS, and hands every
// other frame to onFrame (called on the connection's reader goroutine).
type rawH2 struct {
	ep    *Endpoint
	conns atomic.Int64
}

type rawH2Conn struct {
	n   int64 // 1 for the first connection
	nc  net.Conn
	mu  sync.Mutex
	fr  *http2.Framer
	buf bytes.Buffer
	enc *hpack.Encoder
}

// write runs fn with the framer, serialised.
func (c *rawH2Conn) write(fn func(fr *http2.Framer)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.fr)
}

// block encodes name/value pairs (inside write only).
func (c *rawH2Conn) block(fields ...string) []byte {
	c.buf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		c.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return append([]byte(nil), c.buf.Bytes()...)
}

// respond answers stream with status and no body.
func (c *rawH2Conn) respond(stream uint32, status string) {
	c.write(func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: c.block(":status", status), EndHeaders: true, EndStream: true})
	})
}

func serveRawH2(t *testing.T, initial []http2.Setting, onFrame func(c *rawH2Conn, f http2.Frame)) *rawH2 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawH2{ep: &Endpoint{Scheme: "http", Addr: ln.Addr().String(), Host: ln.Addr().String()}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range open {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, nc)
			mu.Unlock()
			c := &rawH2Conn{n: s.conns.Add(1), nc: nc, fr: http2.NewFramer(nc, nil)}
			c.enc = hpack.NewEncoder(&c.buf)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				br := bufio.NewReader(nc)
				if _, err := io.ReadFull(br, make([]byte, len(http2.ClientPreface))); err != nil {
					return
				}
				c.write(func(fr *http2.Framer) { fr.WriteSettings(initial...) })
				rd := http2.NewFramer(nil, br)
				for {
					f, err := rd.ReadFrame()
					if err != nil {
						return
					}
					if sf, ok := f.(*http2.SettingsFrame); ok {
						if !sf.IsAck() {
							c.write(func(fr *http2.Framer) { fr.WriteSettingsAck() })
						}
						continue
					}
					onFrame(c, f)
				}
			}()
		}
	}()
	return s
}

// TestH2SharedWindowRaisedBySettings: a body waiting for its stream's
// window goes on when the server raises SETTINGS_INITIAL_WINDOW_SIZE.
// Before the fix a shared-mode body waited for a WINDOW_UPDATE and timed
// out.
func TestH2SharedWindowRaisedBySettings(t *testing.T) {
	for _, shared := range []bool{false, true} {
		srv := serveRawH2(t, []http2.Setting{{ID: http2.SettingInitialWindowSize, Val: 0}, {ID: http2.SettingMaxConcurrentStreams, Val: 10}},
			func(c *rawH2Conn, f http2.Frame) {
				switch f := f.(type) {
				case *http2.HeadersFrame:
					if f.StreamEnded() {
						c.respond(f.StreamID, "200")
						return
					}
					c.write(func(fr *http2.Framer) {
						fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
					})
				case *http2.DataFrame:
					if f.StreamEnded() {
						c.respond(f.StreamID, "201")
					}
				}
			})
		ep := srv.ep
		var c *H2
		if shared {
			c = sharedUsers(t, ep, Options{}, 1)[0]
		} else {
			c = testH2(t, ep, Options{})
		}
		var resp Response
		// The first request lets the client read the server's SETTINGS,
		// so the POST's stream starts with a closed window.
		if err := c.RoundTrip(h2get(ep, "/"), &resp); err != nil || resp.Status != 200 {
			t.Fatalf("shared %v: GET: %v %d", shared, err, resp.Status)
		}
		post := &Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/"), Body: bytes.Repeat([]byte("x"), 1000), Timeout: 5 * time.Second}
		if err := c.RoundTrip(post, &resp); err != nil || resp.Status != 201 {
			t.Fatalf("shared %v: POST after the window was raised: %v %d", shared, err, resp.Status)
		}
	}
}

// TestH2SharedAutoDialsOnce: in shared mode under version auto, the
// users' first requests to an https origin that chooses h2 open one
// connection, which the request that found out by ALPN leaves in the pool.
// Before the fix each user's HTTP/1.1 dial was adopted and left idle while
// the shared path dialed again (21 handshakes for 20 users), and under
// max_connections_per_host: 4 no request got through.
func TestH2SharedAutoDialsOnce(t *testing.T) {
	for _, cap := range []int{0, 4} {
		ep, conns := goH2(t, true, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		sh := NewShared(Options{TLS: ep.TLS, H2Shared: true, MaxConnsPerHost: cap})
		t.Cleanup(sh.Close)
		var wg sync.WaitGroup
		var failed atomic.Int64
		for i := 0; i < 20; i++ {
			m := sh.NewTransport()
			t.Cleanup(m.Close)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resp Response
				for j := 0; j < 3; j++ {
					req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second, KeepBody: true}
					if err := m.RoundTrip(req, &resp); err != nil || string(resp.Body) != "ok" {
						failed.Add(1)
						t.Errorf("cap %d: %v %q", cap, err, resp.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		if got := conns.Load(); got != 1 || failed.Load() > 0 {
			t.Errorf("cap %d: 20 users opened %d connections (want 1), %d failed", cap, got, failed.Load())
		}
	}
}

// TestH2SharedPoolByOrigin: users whose endpoint is their own (a host
// from data or a capture) share the origin's connection. Before the fix
// the pool was keyed by the *Endpoint, one connection per user.
func TestH2SharedPoolByOrigin(t *testing.T) {
	ep, conns := goH2(t, false, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	users := sharedUsers(t, ep, Options{Protocol: ProtoH2C}, 6)
	var wg sync.WaitGroup
	for _, u := range users {
		own := *ep
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp Response
			for j := 0; j < 3; j++ {
				if err := u.RoundTrip(h2get(&own, "/"), &resp); err != nil || string(resp.Body) != "ok" {
					t.Errorf("%v %q", err, resp.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := conns.Load(); got != 1 {
		t.Errorf("6 users with their own endpoints for one origin opened %d connections, want 1", got)
	}
}

// TestH2PerRequestConnection: http.connection: per-request holds over
// HTTP/2 in per-user mode: one connection per request, as over HTTP/1.1.
// Before the fix the setting was ignored (one connection for all).
func TestH2PerRequestConnection(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		ep, conns := goH2(t, useTLS, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		proto := ProtoH2C
		if useTLS {
			proto = ProtoAuto
		}
		sh := NewShared(Options{TLS: ep.TLS, Protocol: proto, NewConnPerRequest: true})
		m := sh.NewTransport()
		var resp Response
		for i := 0; i < 3; i++ {
			if err := m.RoundTrip(h2get(ep, "/"), &resp); err != nil || string(resp.Body) != "ok" {
				t.Fatalf("tls %v: %v %q", useTLS, err, resp.Body)
			}
		}
		if m.h2 == nil || len(m.h2.(*H2).conns) != 0 {
			t.Errorf("tls %v: a connection is still held after the answer", useTLS)
		}
		m.Close()
		sh.Close()
		if got := conns.Load(); got != 3 {
			t.Errorf("tls %v: 3 requests with connection: per-request opened %d connections", useTLS, got)
		}
	}
}

// TestH2InterruptIdleRead: Interrupt cuts a request held up reading what
// came on its idle connection (here a frame header cut short). Before the
// fix the connection was published to Interrupt only after that read, so
// the request waited for its whole timeout.
func TestH2InterruptIdleRead(t *testing.T) {
	srv := serveRawH2(t, nil, func(c *rawH2Conn, f http2.Frame) {
		if h, ok := f.(*http2.HeadersFrame); ok {
			c.respond(h.StreamID, "200")
			c.write(func(*http2.Framer) { c.nc.Write([]byte{0, 0, 8}) })
		}
	})
	c := testH2(t, srv.ep, Options{Protocol: ProtoH2C})
	var resp Response
	if err := c.RoundTrip(h2get(srv.ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	// Long enough for the stray bytes to arrive and for the reuse to look.
	time.Sleep(100 * time.Millisecond)
	done := make(chan error, 1)
	go func() {
		req := h2get(srv.ep, "/")
		req.Timeout = time.Minute
		var resp Response
		done <- c.RoundTrip(req, &resp)
	}()
	time.Sleep(100 * time.Millisecond)
	c.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("got %v, want ErrInterrupted", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Interrupt did not cut the read of the idle connection")
	}
}

// TestH2MalformedAsHTTP1: a :status of 000 to 099 and content-length
// values that disagree are malformed answers, as over HTTP/1.1. Before the
// fix a :status 050 was waited past as an interim answer (the 200 after it
// counted as a success) and the last content-length won.
func TestH2MalformedAsHTTP1(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(c *rawH2Conn, fr *http2.Framer, id uint32)
		msg    string
	}{
		{"status 050", func(c *rawH2Conn, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "050"), EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "200"), EndHeaders: true, EndStream: true})
		}, "status 050 is not an HTTP status"},
		{"status 000", func(c *rawH2Conn, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "000"), EndHeaders: true, EndStream: true})
		}, "status 000 is not an HTTP status"},
		{"conflicting content-length", func(c *rawH2Conn, fr *http2.Framer, id uint32) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "200", "content-length", "5", "content-length", "3"), EndHeaders: true})
			fr.WriteData(id, true, []byte("abc"))
		}, "conflicting content-length values 5 and 3"},
	} {
		srv := serveRawH2(t, nil, func(c *rawH2Conn, f http2.Frame) {
			if h, ok := f.(*http2.HeadersFrame); ok {
				c.write(func(fr *http2.Framer) { tc.answer(c, fr, h.StreamID) })
			}
		})
		c := testH2(t, srv.ep, Options{Protocol: ProtoH2C})
		var resp Response
		err := c.RoundTrip(h2get(srv.ep, "/"), &resp)
		if !errors.Is(err, errMalformed) || Classify(err) != sample.Other || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v (status %d), want a malformed answer saying %q", tc.name, err, resp.Status, tc.msg)
		}
	}
}

// TestH2StreamWindowOverflow: a WINDOW_UPDATE that takes one stream's
// window past 2^31-1 resets that stream (FLOW_CONTROL_ERROR, counted as a
// malformed answer) and leaves the connection: the next request goes on
// it. Before the fix the connection was closed and the next request dialed.
func TestH2StreamWindowOverflow(t *testing.T) {
	for _, shared := range []bool{false, true} {
		var resets atomic.Int64
		srv := serveRawH2(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 10}}, func(c *rawH2Conn, f http2.Frame) {
			switch f := f.(type) {
			case *http2.HeadersFrame:
				if f.StreamID == 1 {
					c.write(func(fr *http2.Framer) { fr.WriteWindowUpdate(1, 1<<31-1) })
					return
				}
				c.respond(f.StreamID, "200")
			case *http2.RSTStreamFrame:
				if f.StreamID == 1 && f.ErrCode == http2.ErrCodeFlowControl {
					resets.Add(1)
				}
			}
		})
		var c *H2
		if shared {
			c = sharedUsers(t, srv.ep, Options{Protocol: ProtoH2C}, 1)[0]
		} else {
			c = testH2(t, srv.ep, Options{Protocol: ProtoH2C})
		}
		var resp Response
		err := c.RoundTrip(h2get(srv.ep, "/"), &resp)
		if Classify(err) != sample.Other || !strings.Contains(err.Error(), "FLOW_CONTROL_ERROR: WINDOW_UPDATE took stream 1's window") {
			t.Fatalf("shared %v: %v", shared, err)
		}
		if err := c.RoundTrip(h2get(srv.ep, "/"), &resp); err != nil || resp.Status != 200 {
			t.Fatalf("shared %v: the next request: %v %d", shared, err, resp.Status)
		}
		if got := srv.conns.Load(); got != 1 {
			t.Errorf("shared %v: %d connections, want the one kept", shared, got)
		}
		if resets.Load() != 1 {
			t.Errorf("shared %v: the server got %d RST_STREAM FLOW_CONTROL_ERROR for stream 1, want 1", shared, resets.Load())
		}
	}
}

// TestH2SharedLateHeaderBlock: the rest of a header block for a stream its
// user gave up on, arriving while that user's next stream (same id, on a
// connection to another origin) is answered, is not written into the new
// answer. Before the fix the guard compared stream ids, equal across
// connections, and the late field landed in the new response.
func TestH2SharedLateHeaderBlock(t *testing.T) {
	quit := make(chan struct{})
	t.Cleanup(func() { close(quit) })
	cont, acked := make(chan struct{}), make(chan struct{})
	var ackOnce, contOnce sync.Once
	settings := []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 10}}
	first := serveRawH2(t, settings, func(c *rawH2Conn, f http2.Frame) {
		switch f := f.(type) {
		case *http2.HeadersFrame:
			id := f.StreamID
			c.write(func(fr *http2.Framer) {
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "200")})
			})
			go func() {
				select {
				case <-cont:
				case <-quit:
					return
				}
				c.write(func(fr *http2.Framer) {
					fr.WriteContinuation(id, true, c.block("x-late", "from-the-abandoned-stream"))
					fr.WritePing(false, [8]byte{7})
				})
			}()
		case *http2.PingFrame:
			// The client acks after it handled the CONTINUATION.
			if f.IsAck() {
				ackOnce.Do(func() { close(acked) })
			}
		}
	})
	second := serveRawH2(t, settings, func(c *rawH2Conn, f http2.Frame) {
		if h, ok := f.(*http2.HeadersFrame); ok {
			id := h.StreamID
			c.write(func(fr *http2.Framer) {
				fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(":status", "200", "x-own", "yes"), EndHeaders: true})
			})
			contOnce.Do(func() { close(cont) })
			go func() {
				select {
				case <-acked:
				case <-quit:
					return
				}
				c.write(func(fr *http2.Framer) { fr.WriteData(id, true, []byte("ok")) })
			}()
		}
	})
	u := sharedUsers(t, first.ep, Options{Protocol: ProtoH2C}, 1)[0]
	var resp Response
	req := h2get(first.ep, "/")
	req.Timeout = 300 * time.Millisecond
	if err := u.RoundTrip(req, &resp); Classify(err) != sample.Timeout {
		t.Fatalf("the abandoned request: %v", err)
	}
	if err := u.RoundTrip(h2get(second.ep, "/"), &resp); err != nil || string(resp.Body) != "ok" {
		t.Fatalf("the next request: %v %q", err, resp.Body)
	}
	for _, f := range resp.Header {
		if string(f.Name) == "x-late" {
			t.Fatalf("the new answer got the abandoned stream's field %s: %s", f.Name, f.Value)
		}
	}
	if len(resp.Header) != 1 || string(resp.Header[0].Name) != "x-own" {
		t.Errorf("headers %q, want x-own only", resp.Header)
	}
}

// TestH2CertRefusalBlamedAsH1: a TLS 1.3 server that asked for a client
// certificate we do not have and drops the connection before answering is
// a tls failure over HTTP/2 as over HTTP/1.1, per-user or shared. Before
// the fix the HTTP/2 path never asked the certificate watcher: conn_reset.
func TestH2CertRefusalBlamedAsH1(t *testing.T) {
	for _, alpn := range []string{"http/1.1", "h2"} {
		for _, shared := range []bool{false, true} {
			addr := resetAfterHandshake(t, tls.VersionTLS13, []string{alpn})
			ep := &Endpoint{Scheme: "https", Addr: addr, Host: "x"}
			sh := NewShared(Options{TLS: &tls.Config{InsecureSkipVerify: true}, H2Shared: shared})
			tr := sh.NewTransport()
			for i := 0; i < 3; i++ {
				var resp Response
				err := tr.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second}, &resp)
				if got := Classify(err); got != sample.TLS {
					t.Errorf("%s, shared %v, request %d: class %v (%v), want tls", alpn, shared, i, got, err)
				}
			}
			tr.Close()
			sh.Close()
		}
	}
}
