package httpc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/testserver"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

func endpointFor(t testing.TB, rawURL string) *Endpoint {
	t.Helper()
	addr := strings.TrimPrefix(rawURL, "http://")
	return &Endpoint{Scheme: "http", Addr: addr, Host: addr}
}

func get(ep *Endpoint, path string) *Request {
	return &Request{Method: "GET", Endpoint: ep, PathQuery: []byte(path), Timeout: 2 * time.Second, KeepBody: true}
}

func TestH1AgainstNetHTTP(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/len":
			w.Header().Set("X-Echo", r.Header.Get("X-In"))
			io.WriteString(w, "hello")
		case "/chunked":
			// Flushing before the end forces chunked transfer encoding.
			io.WriteString(w, "part1-")
			w.(http.Flusher).Flush()
			io.WriteString(w, "part2")
		case "/post":
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(201)
			fmt.Fprintf(w, "%s:%d", r.Method, len(b))
		case "/nocontent":
			w.WriteHeader(204)
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), 300000))
		}
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	c := NewH1()
	defer c.Close()
	var resp Response

	cases := []struct {
		req    *Request
		status int
		body   string
		why    string
	}{
		{&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/len"), Header: []Field{{Name: []byte("X-In"), Value: []byte("v1")}}, Timeout: time.Second, KeepBody: true}, 200, "hello", "content-length body and request headers"},
		{get(ep, "/chunked"), 200, "part1-part2", "chunked body is reassembled"},
		{&Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/post"), Body: []byte("12345"), Timeout: time.Second, KeepBody: true}, 201, "POST:5", "request body with content-length"},
		{&Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/post"), Timeout: time.Second, KeepBody: true}, 201, "POST:0", "empty POST still sends Content-Length: 0"},
		{get(ep, "/nocontent"), 204, "", "204 has no body"},
		{&Request{Method: "HEAD", Endpoint: ep, PathQuery: []byte("/len"), Timeout: time.Second, KeepBody: true}, 200, "", "HEAD has no body even with Content-Length"},
		{get(ep, "/len"), 200, "hello", "connection still usable after HEAD"},
	}
	for _, tc := range cases {
		if err := c.RoundTrip(tc.req, &resp); err != nil {
			t.Fatalf("%s: %v", tc.why, err)
		}
		if resp.Status != tc.status || string(resp.Body) != tc.body {
			t.Errorf("%s: got %d %q, want %d %q", tc.why, resp.Status, resp.Body, tc.status, tc.body)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("keep-alive: server saw %d connections for %d requests, want 1", n, len(cases))
	}
	if err := c.RoundTrip(get(ep, "/len"), &resp); err != nil || string(resp.Get("x-echo")) != "" {
		t.Fatalf("header lookup: %v", err)
	}

	// Connection: close from the server means a new connection next time.
	if err := c.RoundTrip(get(ep, "/close"), &resp); err != nil || string(resp.Body) != "bye" {
		t.Fatalf("close: %v %q", err, resp.Body)
	}
	if err := c.RoundTrip(get(ep, "/len"), &resp); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("after Connection: close the server saw %d connections, want 2", n)
	}

	// A body that is not kept is still read, so the connection stays good.
	big := get(ep, "/big")
	big.KeepBody = false
	if err := c.RoundTrip(big, &resp); err != nil || resp.BodyLen != 300000 || len(resp.Body) != 0 {
		t.Fatalf("discarded body: err=%v len=%d kept=%d", err, resp.BodyLen, len(resp.Body))
	}
	if err := c.RoundTrip(get(ep, "/len"), &resp); err != nil || string(resp.Body) != "hello" {
		t.Fatalf("after discarded body: %v %q", err, resp.Body)
	}
}

// rawServer answers every connection with the given bytes after reading a
// request head.
func rawServer(t *testing.T, answer string, closeAfter bool) *Endpoint {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					io.WriteString(c, answer)
					if closeAfter {
						return
					}
				}
			}(c)
		}
	}()
	return &Endpoint{Scheme: "http", Addr: ln.Addr().String(), Host: "x"}
}

func TestH1Wire(t *testing.T) {
	cases := []struct {
		answer     string
		closeAfter bool
		status     int
		body       string
		why        string
	}{
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, "ok", "interim 1xx answers are skipped"},
		{"HTTP/1.0 200 OK\r\n\r\nuntil close", true, 200, "until close", "no length: body runs to EOF"},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n", false, 200, "abc", "chunk extensions and trailers"},
		{"HTTP/1.1 404 Not Found\nContent-Length: 1\n\nx", false, 404, "x", "bare LF line endings"},
	}
	for _, tc := range cases {
		ep := rawServer(t, tc.answer, tc.closeAfter)
		c := NewH1()
		var resp Response
		for i := 0; i < 2; i++ {
			if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
				t.Fatalf("%s (request %d): %v", tc.why, i, err)
			}
			if resp.Status != tc.status || string(resp.Body) != tc.body {
				t.Errorf("%s: got %d %q", tc.why, resp.Status, resp.Body)
			}
		}
		c.Close()
	}
}

func TestH1Failures(t *testing.T) {
	refused := &Endpoint{Scheme: "http", Addr: hostile.Refused(t), Host: "x"}

	hang := rawServer(t, "", false) // reads the request, never answers
	garbage := rawServer(t, "SMTP ready\r\n", true)
	truncated := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true)

	resetLn, _ := net.Listen("tcp", "127.0.0.1:0")
	t.Cleanup(func() { resetLn.Close() })
	go func() {
		for {
			c, err := resetLn.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadString('\n')
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	reset := &Endpoint{Scheme: "http", Addr: resetLn.Addr().String(), Host: "x"}

	cases := []struct {
		ep   *Endpoint
		want sample.Class
		why  string
	}{
		{refused, sample.ConnRefused, "closed port"},
		{hang, sample.Timeout, "no answer within the timeout"},
		{reset, sample.ConnReset, "RST after reading the request"},
		{garbage, sample.Other, "not HTTP"},
		{truncated, sample.ConnReset, "body shorter than Content-Length"},
	}
	for _, tc := range cases {
		c := NewH1()
		req := get(tc.ep, "/")
		req.Timeout = 200 * time.Millisecond
		var resp Response
		err := c.RoundTrip(req, &resp)
		if got := Classify(err); got != tc.want {
			t.Errorf("%s: class %v (err %v), want %v", tc.why, got, err, tc.want)
		}
		c.Close()
	}
}

func TestH1IdleConnectionClosedByServer(t *testing.T) {
	// The server drops idle connections after 300ms; a user that thought
	// longer must not see that as a failure of its next request.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.IdleTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	c := NewH1()
	defer c.Close()
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	// Idle for a while: every reuse is checked now, and before, only a
	// connection idle for a second or more was.
	time.Sleep(1200 * time.Millisecond)
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatalf("request after the server closed the idle connection: %v", err)
	}
}

func TestH1Interrupt(t *testing.T) {
	ep := rawServer(t, "", false)
	c := NewH1()
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		var resp Response
		req := get(ep, "/")
		req.Timeout = 10 * time.Second
		done <- c.RoundTrip(req, &resp)
	}()
	time.Sleep(100 * time.Millisecond)
	c.Interrupt()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("interrupted request succeeded")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Interrupt did not cut off the request")
	}
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != ErrInterrupted {
		t.Errorf("request after Interrupt: %v, want ErrInterrupted", err)
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 500 X\r\n\r\nbody"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 5000) + "\r\nContent-Length: 200\r\n\r\n" + strings.Repeat("b", 200)))
	// Short lines past the small cap, then a line longer than the reader's
	// buffer: the small-cap read fails before the long line.
	f.Add([]byte("HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 40) + "X-Long: " + strings.Repeat("v", 6000) + "\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 4096)
		var resp Response
		req := &Request{Method: "GET", KeepBody: true}
		readResponse(br, req, &resp, DefaultMaxHeaderBytes, DefaultMaxKeptBody)
		if len(resp.Body) > len(data) {
			t.Fatalf("body of %d bytes from %d bytes of input", len(resp.Body), len(data))
		}
		// Small caps hold whatever the input, read once and read again into
		// the same Response (as a connection reuses it). A Response read
		// under larger caps keeps the line buffer those allowed, so the
		// small caps get one of their own: a client's caps never change.
		var small Response
		for range 2 {
			br.Reset(bytes.NewReader(data))
			readResponse(br, req, &small, 1024, 100)
			if len(small.hbuf) > 1024 || len(small.lbuf) > 1024+4096 || len(small.Body) > 100 {
				t.Fatalf("header %d + line %d bytes, body %d kept, over caps of 1024 and 100", len(small.hbuf), len(small.lbuf), len(small.Body))
			}
		}
	})
}

func cannedServer(b *testing.B, answer string) *Endpoint {
	return &Endpoint{Scheme: "http", Addr: testserver.Canned(b, answer), Host: "bench"}
}

// BenchmarkH1KeepAlive is the hot path of a plain-HTTP user: one request
// and answer on a kept-alive connection. It must not allocate.
func BenchmarkH1KeepAlive(b *testing.B) {
	ep := cannedServer(b, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!")
	c := NewH1()
	defer c.Close()
	req := get(ep, "/")
	req.KeepBody = false
	req.Header = []Field{{Name: []byte("Accept"), Value: []byte("*/*")}}
	var resp Response
	c.RoundTrip(req, &resp) // warm up buffers and the connection
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.RoundTrip(req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}
