package httpc

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestH1ReuseAfterTimeoutPassed: a user that thinks longer than its
// request timeout (timeout 1s, think 3s..5s) must keep its connection.
// Before, the passed deadline of the previous request made the look at the
// socket fail at once, the live connection was taken for a closed one, and
// every request dialled anew (3 connections here).
func TestH1ReuseAfterTimeoutPassed(t *testing.T) {
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	c := NewH1()
	defer c.Close()
	const timeout = time.Second
	var resp Response
	for i := 0; i < 3; i++ {
		req := get(ep, "/")
		req.Timeout = timeout
		req.Sent = time.Now()
		if err := c.RoundTrip(req, &resp); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		// Think until this request's deadline has passed.
		time.Sleep(time.Until(req.Sent.Add(timeout)) + 100*time.Millisecond)
	}
	if n := opened.Load(); n != 1 {
		t.Errorf("3 keep-alive requests, each after the previous one's timeout had passed, opened %d connections, want 1", n)
	}
}

// TestPeekFailureRecorded: a look at the socket that fails must leave
// hc.peeked saying closed, since RoundTrip reads it after the call; before,
// the value of an earlier look stayed.
func TestPeekFailureRecorded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	hc := &h1conn{nc: nc, rc: rc}
	hc.peekFn = hc.peekOnce
	if got := hc.peek(); got != peekIdle {
		t.Fatalf("open idle connection: peek %v, want idle", got)
	}
	// A passed deadline makes the runtime refuse the look.
	nc.SetReadDeadline(time.Unix(1, 0))
	if got := hc.peek(); got != peekClosed {
		t.Errorf("failed look: peek returned %v, want closed", got)
	}
	if hc.peeked != peekClosed {
		t.Errorf("failed look: hc.peeked = %v, want closed", hc.peeked)
	}
}
