package httpc

import (
	"errors"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interruptSafety bounds how long a test waits for an interrupted request
// to return; far below the request timeout (an hour), so a request that
// is not cut off fails the test instead of passing late.
const interruptSafety = 20 * time.Second

// fullListener returns the address of a listener whose accept queue is
// full and never drained: a connect to it hangs (its SYNs are dropped)
// until the dialer gives up.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	// Backlog 0: Linux queues one connection, then drops SYNs.
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*syscall.SockaddrInet4).Port}).String()
	for i := 0; ; i++ {
		if i == 16 {
			t.Skip("could not fill the accept queue of a loopback listener")
		}
		c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return addr
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// TestH1InterruptInDial: Interrupt reaches a user whose dial hangs (a
// server too busy to accept). Before, it had no connection to cut and the
// user held the end of the run until its request timed out.
func TestH1InterruptInDial(t *testing.T) {
	ep := &Endpoint{Scheme: "http", Addr: fullListener(t), Host: "x"}
	c := NewH1()
	defer c.Close()
	dialing := make(chan struct{})
	c.ud.dialer.Control = func(string, string, syscall.RawConn) error {
		close(dialing)
		return nil
	}
	done := make(chan error, 1)
	go func() {
		var resp Response
		req := get(ep, "/")
		req.Timeout = time.Hour
		done <- c.RoundTrip(req, &resp)
	}()
	select {
	case <-dialing:
	case err := <-done:
		t.Fatalf("request returned before dialling: %v", err)
	}
	c.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("request interrupted while dialling: %v, want ErrInterrupted", err)
		}
	case <-time.After(interruptSafety):
		t.Fatal("Interrupt did not reach a request that was dialling")
	}
}

// TestH1InterruptWaitingForSlot: Interrupt reaches a user waiting for a
// connection slot under max_connections_per_host. Before, it waited out
// its request timeout.
func TestH1InterruptWaitingForSlot(t *testing.T) {
	ep := rawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	sh := NewShared(Options{MaxConnsPerHost: 1})
	defer sh.Close()
	holder := sh.NewTransport()
	defer holder.Close()
	var resp Response
	// The holder keeps its connection, and so the only slot.
	if err := holder.RoundTrip(get(ep, "/"), &resp); err != nil {
		t.Fatal(err)
	}
	waiter := sh.NewTransport()
	defer waiter.Close()
	done := make(chan error, 1)
	go func() {
		var resp Response
		req := get(ep, "/")
		req.Timeout = time.Hour
		done <- waiter.RoundTrip(req, &resp)
	}()
	waitForStack(t, "(*hostLimits).acquire", done)
	waiter.Interrupt()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) {
			t.Errorf("request interrupted while waiting for a slot: %v, want ErrInterrupted", err)
		}
	case <-time.After(interruptSafety):
		t.Fatal("Interrupt did not reach a request waiting for a connection slot")
	}
}

// waitForStack waits until some goroutine is in fn, so the test interrupts
// a request that is already waiting there rather than one yet to start.
func waitForStack(t *testing.T, fn string, done <-chan error) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(interruptSafety); time.Now().Before(deadline); {
		select {
		case err := <-done:
			t.Fatalf("request returned before reaching %s: %v", fn, err)
		default:
		}
		if strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no goroutine reached %s", fn)
}
