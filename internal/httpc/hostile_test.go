package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

func hostileEP(s *hostile.Server) *Endpoint {
	return &Endpoint{Scheme: "http", Addr: s.Addr, Host: "x"}
}

// TestH1HeaderBlockBounded: header lines that never end, or one line that
// never ends, fail the request once the block passes the cap, within the
// cap's memory, and the connection is closed. Before the bound the first
// kept every line until the process died, and the second failed only
// because a line longer than the 4 KiB read buffer was refused outright,
// which also refused a real server's 10 KiB cookie.
func TestH1HeaderBlockBounded(t *testing.T) {
	for _, tc := range []struct {
		srv *hostile.Server
		why string
	}{
		{hostile.EndlessHeaders(t), "endless header lines"},
		{hostile.HugeHeaderLine(t), "one endless header line"},
	} {
		c := NewH1()
		c.MaxHeaderBytes = 16 << 10
		var resp Response
		req := get(hostileEP(tc.srv), "/")
		req.Timeout = 20 * time.Second
		err := c.RoundTrip(req, &resp)
		if err == nil || !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), "longer than 16384 bytes (http.max_header_bytes)") {
			t.Errorf("%s: err %v, want the header cap's error", tc.why, err)
		}
		if got := Classify(err); got != sample.Other {
			t.Errorf("%s: class %v, want other", tc.why, got)
		}
		if cap(resp.hbuf) > 2*c.MaxHeaderBytes || cap(resp.lbuf) > 2*c.MaxHeaderBytes+4096 {
			t.Errorf("%s: kept %d + %d bytes of header for a %d cap", tc.why, cap(resp.hbuf), cap(resp.lbuf), c.MaxHeaderBytes)
		}
		if len(c.conns) != 0 {
			t.Errorf("%s: connection kept after the failure", tc.why)
		}
		c.Close()
	}

	long := hostile.LongHeaderLine(t, 10<<10)
	c := NewH1()
	defer c.Close()
	var resp Response
	ep := hostileEP(long)
	for i := 0; i < 2; i++ {
		if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || resp.Status != 200 || string(resp.Body) != "ok" || len(resp.Get("Set-Cookie")) != 4+10<<10 {
			t.Fatalf("10 KiB cookie under the 64 KiB default, request %d: err %v, status %d, body %q, cookie %d bytes", i, err, resp.Status, resp.Body, len(resp.Get("Set-Cookie")))
		}
	}
	if n := long.Conns(); n != 1 {
		t.Errorf("long header line: %d connections for 2 requests, want 1", n)
	}
}

// TestH1FramingFailsTheGuiltyAnswer: an answer whose Content-Length is
// shorter than its body, and a 101 to a plain GET, are the requests that
// fail (class other, "malformed HTTP response"), and each is answered on a
// new connection: the next request is never blamed. Before, the first gave
// ok then other in turn, the second ok then other (the next request read
// nothing on an upgraded connection).
func TestH1FramingFailsTheGuiltyAnswer(t *testing.T) {
	for _, tc := range []struct {
		srv  *hostile.Server
		want string
	}{
		{hostile.ShortContentLength(t), "bytes follow the end of the answer"},
		{hostile.Upgrade101(t), "101 Switching Protocols to a request that asked for no upgrade"},
	} {
		c := NewH1()
		const n = 20
		ep := hostileEP(tc.srv)
		for i := 0; i < n; i++ {
			var resp Response
			req := get(ep, "/")
			err := c.RoundTrip(req, &resp)
			if err == nil || !strings.Contains(err.Error(), tc.want) || Classify(err) != sample.Other {
				t.Fatalf("request %d: err %v (class %v), want other: %q", i, err, Classify(err), tc.want)
			}
		}
		if got := tc.srv.Conns(); got != n {
			t.Errorf("%q: %d connections for %d requests: a broken connection was reused", tc.want, got, n)
		}
		c.Close()
	}
}

// TestH1BodyKeptUpToCap: a big body is read whole and counted, but only
// its first MaxKeptBody bytes are kept; CutNote says so.
func TestH1BodyKeptUpToCap(t *testing.T) {
	srv := hostile.BigBody(t, 3<<20, "MARK")
	c := NewH1()
	defer c.Close()
	var resp Response
	ep := hostileEP(srv)
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	if resp.BodyLen != 3<<20 || len(resp.Body) != DefaultMaxKeptBody || cap(resp.Body) > 2*DefaultMaxKeptBody || !resp.Cut() {
		t.Fatalf("body %d bytes, kept %d (cap %d), cut %v", resp.BodyLen, len(resp.Body), cap(resp.Body), resp.Cut())
	}
	if note := resp.CutNote(); !strings.Contains(note, "first 1048576 of the body's 3145728 bytes") {
		t.Errorf("note %q", note)
	}
	c.MaxKeptBody = 4 << 20
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || len(resp.Body) != 3<<20 || resp.Cut() || resp.CutNote() != "" {
		t.Fatalf("with a 4 MiB cap: err %v, kept %d", err, len(resp.Body))
	}
}

// TestH1BigRequestBody: a body written apart from its head arrives whole,
// and the connection stays usable.
func TestH1BigRequestBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d:%d", len(b), bytes.Count(b, []byte("q")))
	}))
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	c := NewH1()
	defer c.Close()
	var resp Response
	for _, n := range []int{10, separateBodyOver + 1, 1 << 20, 3} {
		req := &Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/"), Body: bytes.Repeat([]byte("q"), n), Timeout: 5 * time.Second, KeepBody: true}
		if err := c.RoundTrip(req, &resp); err != nil || string(resp.Body) != fmt.Sprintf("%d:%d", n, n) {
			t.Fatalf("body of %d bytes: err %v, server got %q", n, err, resp.Body)
		}
	}
	if len(c.conns) != 1 {
		t.Errorf("%d connections, want 1", len(c.conns))
	}
}

// TestH1LateStrayBytesNotBlamedOnNext: bytes a server sends some time after
// a complete answer are found before the connection is reused, so the next
// request goes on a new connection. Before, a connection reused within a
// second was not looked at, and the next request read the stray bytes as
// its answer (other: bad status line).
func TestH1LateStrayBytesNotBlamedOnNext(t *testing.T) {
	srv := hostile.Serve(t, nil, func(s *hostile.Server, c net.Conn) {
		br := bufio.NewReader(c)
		for s.ReadRequest(br) {
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
			io.WriteString(c, "stray")
		}
	})
	c := NewH1()
	defer c.Close()
	ep := hostileEP(srv)
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatalf("first request: %v", err)
	}
	// Wait until the stray bytes are surely in; a second is far below the
	// old one-second window in which reuse went unchecked.
	deadline := time.Now().Add(5 * time.Second)
	for len(c.conns) == 1 && c.conns[0].peek() == peekIdle && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || string(resp.Body) != "ok" {
		t.Fatalf("second request blamed for the first answer's stray bytes: %v", err)
	}
	if n := srv.Conns(); n != 2 {
		t.Errorf("%d connections, want 2 (the first replaced)", n)
	}
}

// A write cut off by the request's deadline says "write", as a plain
// Write and the event-loop engine say: it said "raw-write" (Go's name for
// RawConn.Write), so one failure showed as two error rows when the
// engines' results were merged or compared.
func TestWriteTimeoutSaysWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			held <- c // accepted, never read
		}
	}()
	defer func() {
		select {
		case c := <-held:
			c.Close()
		default:
		}
	}()
	c := NewH1()
	defer c.Close()
	req := get(&Endpoint{Scheme: "http", Addr: ln.Addr().String(), Host: "x"}, "/")
	req.Method = "POST"
	req.Body = bytes.Repeat([]byte("x"), 64<<20)
	req.Timeout = 300 * time.Millisecond
	var resp Response
	err = c.RoundTrip(req, &resp)
	if err == nil || Classify(err) != sample.Timeout {
		t.Fatalf("err %v (class %v), want a timeout", err, Classify(err))
	}
	if msg := err.Error(); strings.Contains(msg, "raw-write") || !strings.Contains(msg, "write tcp") {
		t.Errorf("message %q, want the write's own words (\"write tcp …\")", msg)
	}
}
