//go:build linux

package readiness

import (
	"errors"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

type counter struct{ n atomic.Int64 }

func (c *counter) Ready() { c.n.Add(1) }

func pair(t *testing.T) (client *net.TCPConn, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// A safety net only: what is checked is the condition.
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOneReadyPerArming: a registration fires once per arming however
// much arrives; arming again with bytes already waiting fires at once;
// after Unregister nothing fires; and with no socket left the poller's
// goroutine ends.
func TestOneReadyPerArming(t *testing.T) {
	base := runtime.NumGoroutine()
	c, s := pair(t)
	h := &counter{}
	r, err := Register(c, h, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("a"))
	if err := r.Rearm(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first readiness", func() bool { return h.n.Load() == 1 })
	// More bytes, not yet re-armed: they wait.
	s.Write([]byte("bc"))
	buf := make([]byte, 8)
	n, err := r.Read(buf)
	got := string(buf[:n])
	for err == nil && len(got) < 3 {
		n, err = r.Read(buf)
		got += string(buf[:n])
	}
	if got != "abc" {
		t.Fatalf("read %q (%v), want abc", got, err)
	}
	if _, err := r.Read(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("read of a drained socket: %v, want ErrWouldBlock", err)
	}
	if h.n.Load() != 1 {
		t.Fatalf("%d readinesses before re-arming, want 1", h.n.Load())
	}
	// Bytes that came before the arming fire at once.
	s.Write([]byte("d"))
	eventually(t, "the bytes to arrive", func() bool {
		var b [1]byte
		return waiting(c, b[:]) == 1
	})
	r.Rearm()
	eventually(t, "the second readiness", func() bool { return h.n.Load() == 2 })
	r.Unregister()
	r.Rearm() // a late re-arm after Unregister is harmless
	s.Write([]byte("e"))
	s.Close()
	var b [8]byte
	for {
		if _, err := r.Read(b[:]); err == io.EOF {
			break
		}
	}
	if h.n.Load() != 2 {
		t.Errorf("%d readinesses, want 2: one came after Unregister", h.n.Load())
	}
	eventually(t, "the poller's goroutine to end", func() bool { return runtime.NumGoroutine() <= base })
}

// waiting says how many bytes (up to len(b)) the socket holds unread.
func waiting(c *net.TCPConn, b []byte) int {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Read(func(fd uintptr) bool {
		n, _, _ = unix.Recvfrom(int(fd), b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true
	})
	return n
}
