package httpc

import (
	"crypto/tls"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// handshakeOnlyServer completes TLS handshakes and then keeps only a
// duplicate of each socket's descriptor, freeing its own Go objects, so a
// test's heap holds the client side alone.
func handshakeOnlyServer(t *testing.T) string {
	certs := testCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var fds []int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cfg := &tls.Config{Certificates: certs}
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := tls.Server(c, cfg)
			tc.SetDeadline(time.Now().Add(10 * time.Second))
			if tc.Handshake() == nil {
				rc, _ := c.(*net.TCPConn).SyscallConn()
				rc.Control(func(fd uintptr) {
					if d, err := syscall.Dup(int(fd)); err == nil {
						mu.Lock()
						fds = append(fds, d)
						mu.Unlock()
					}
				})
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, fd := range fds {
			syscall.Close(fd)
		}
	})
	return ln.Addr().String()
}

// idleTLSClientBytes is the heap each of n users holds once it has made
// its one HTTPS connection (a full handshake, its session cache made) and
// gone idle.
func idleTLSClientBytes(t *testing.T, addr string, n int) float64 {
	ep := httpsEP(addr)
	sh := NewShared(insecure())
	defer sh.Close()
	clients := make([]*Mux, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range clients {
		m := sh.NewTransport()
		if _, err := m.h1.conn(ep, time.Now(), time.Now().Add(10*time.Second)); err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		clients[i] = m
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, c := range clients {
		c.Close()
	}
	return float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc)) / float64(n)
}

// TestTLSIdleClientMemory measures what an idle HTTPS user costs: its
// client, its one TLS connection and its session cache. The bound is
// what the figure was when measured (about 9 KB, most of it crypto/tls's
// own buffers) with room for Go versions; it fails if a change makes
// every idle connection hold a buffer it need not.
func TestTLSIdleClientMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	if testing.Short() {
		t.Skip("400 handshakes")
	}
	const limit = 16 << 10
	addr := handshakeOnlyServer(t)
	idleTLSClientBytes(t, addr, 50)
	per := (idleTLSClientBytes(t, addr, 200)*200 - idleTLSClientBytes(t, addr, 50)*50) / 150
	t.Logf("%.0f B of heap per idle HTTPS user with one connection", per)
	if per > limit {
		t.Errorf("an idle HTTPS user holds %.0f B, want at most %d", per, limit)
	}
}
