package httpc

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// idleClientBytes is the heap that each of n clients holds once it has
// dialled its one connection and gone idle. The listener never accepts:
// the kernel completes the handshakes, so only the client side allocates.
func idleClientBytes(t *testing.T, n int) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ep := &Endpoint{Scheme: "http", Addr: ln.Addr().String(), Host: "x"}
	sh := NewShared(Options{})
	defer sh.Close()
	clients := make([]*H1, n)
	var before, after runtime.MemStats
	// Twice: what earlier tests left with finalizers goes only at the
	// second collection.
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range clients {
		c := sh.NewTransport().h1
		if _, err := c.conn(ep, time.Now(), time.Now().Add(10*time.Second)); err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		clients[i] = c
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, c := range clients {
		c.Close()
	}
	return float64(after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc)) / float64(n)
}

// TestH1IdleClientMemory: an idle user's client with its kept connection
// holds at most 800 bytes of heap (net's socket state included; about 500
// now). It held about 1,130 while each client kept a cancellable context
// for Interrupt (which every dial gave a done channel and a map of
// children, for good) and a copy of the dialer.
func TestH1IdleClientMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	const limit = 800
	// The marginal cost, between 100 and 400 clients: what a few clients
	// cost depends on what the heap held before.
	idleClientBytes(t, 100)
	per := (idleClientBytes(t, 400)*400 - idleClientBytes(t, 100)*100) / 300
	t.Logf("%.0f B of heap per idle client with one connection", per)
	if per > limit {
		t.Errorf("an idle client holds %.0f B, want at most %d", per, limit)
	}
}
