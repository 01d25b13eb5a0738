package dashboard

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func openFiles(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// A flood of connections takes at most maxConns of the process's files:
// the rest wait in the kernel's accept queue. Before, 1,200 connections
// to /events took 1,200 files and the load failed with fd_limit.
func TestConnectionFloodTakesBoundedFiles(t *testing.T) {
	s, err := New("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(nil)
	addr, _, _ := strings.Cut(strings.TrimPrefix(s.URL(), "http://"), "/")
	base := openFiles(t)
	const flood = 4 * maxConns
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < flood; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Each connection is one file here (the client's end) and, once the
	// server accepts it, one more there: wait for the server to take all
	// it will, then look again to be sure it took no more.
	limit := base + flood + maxConns
	deadline := time.Now().Add(30 * time.Second)
	for openFiles(t) < limit && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := openFiles(t); n > limit+2 {
		t.Errorf("%d connections: %d files open, want at most %d (%d before, %d server-side at most)", flood, n, limit, base, maxConns)
	}
}
