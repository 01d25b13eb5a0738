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

// countLooks makes every look at the client's one connection count into n.
func countLooks(t *testing.T, c *H1, n *atomic.Int32) {
	t.Helper()
	if len(c.conns) != 1 || c.conns[0].rc == nil {
		t.Fatalf("want one connection with a raw descriptor, have %d", len(c.conns))
	}
	hc := c.conns[0]
	look := hc.peekOnce
	hc.peekFn = func(fd uintptr) bool { n.Add(1); return look(fd) }
}

// TestH1OneLookPerKeptAliveRequest: a user that sends its next request
// right after an answer looks at the socket once per request, after the
// answer, not again before reusing it. Before, every kept-alive request
// paid two looks (two recvfrom system calls). The window is widened so the
// count does not depend on how promptly a loaded machine runs the loop.
func TestH1OneLookPerKeptAliveRequest(t *testing.T) {
	defer func(w time.Duration) { recheckAfter = w }(recheckAfter)
	recheckAfter = time.Hour
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
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	var looks atomic.Int32
	countLooks(t, c, &looks)
	const n = 50
	for i := 0; i < n; i++ {
		if err := c.RoundTrip(get(ep, "/"), &resp); err != nil || string(resp.Body) != "ok" {
			t.Fatalf("request %d: %v %q", i, err, resp.Body)
		}
	}
	if got := looks.Load(); got != n {
		t.Errorf("%d kept-alive requests looked at the socket %d times, want %d", n, got, n)
	}
	if got := opened.Load(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}

// TestH1LookBeforeReuseAfterAWhile: past the window, a reuse looks again,
// so a connection the server closed while the user thought is replaced,
// not blamed on the next request.
func TestH1LookBeforeReuseAfterAWhile(t *testing.T) {
	defer func(w time.Duration) { recheckAfter = w }(recheckAfter)
	recheckAfter = time.Millisecond
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ep := endpointFor(t, srv.URL)
	c := NewH1()
	defer c.Close()
	var resp Response
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	var looks atomic.Int32
	countLooks(t, c, &looks)
	time.Sleep(300 * time.Millisecond)
	if err := c.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatalf("request after the server closed the idle connection: %v", err)
	}
	if got := looks.Load(); got != 1 {
		t.Errorf("a reuse after the window looked %d times, want 1", got)
	}
}
