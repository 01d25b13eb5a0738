//go:build linux

package epoll

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWakeAndTimer: a wake is reported under WakeKey until cleared, and an
// armed timer is reported under its caller's key.
func TestWakeAndTimer(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs := make([]Event, 4)
	if n, err := s.Wait(evs, 0); n != 0 || err != nil {
		t.Fatalf("an idle set reported %d events (%v)", n, err)
	}
	if err := s.Wake(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Wait(evs, -1); n != 1 || err != nil || evs[0].Fd != WakeKey {
		t.Fatalf("after Wake: %d events %+v (%v), want one under WakeKey", n, evs[:n], err)
	}
	s.ClearWake()
	if n, _ := s.Wait(evs, 0); n != 0 {
		t.Fatalf("a cleared wake still reported %d events", n)
	}

	tm, err := NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tm.FD())
	if err := s.Add(tm.FD(), &Event{Events: unix.EPOLLIN, Fd: 7}); err != nil {
		t.Fatal(err)
	}
	if err := tm.Set(1); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Wait(evs, -1); n != 1 || err != nil || evs[0].Fd != 7 {
		t.Fatalf("after the timer: %d events %+v (%v), want one under key 7", n, evs[:n], err)
	}
	if fired, err := tm.Clear(); !fired || err != nil {
		t.Fatalf("the reported timer: expired %v (%v), want true", fired, err)
	}
	if fired, err := tm.Clear(); fired || err != nil {
		t.Fatalf("a cleared timer: expired %v (%v), want false and no error", fired, err)
	}
	// A time already due fires at once rather than disarming the timer.
	if err := tm.Set(-5); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Wait(evs, -1); n != 1 || err != nil || evs[0].Fd != 7 {
		t.Fatalf("after Set(-5): %d events (%v), want the timer's", n, err)
	}
	if fired, _ := tm.Clear(); !fired {
		t.Fatal("the timer set in the past had not expired")
	}
	if err := s.Del(tm.FD()); err != nil {
		t.Fatal(err)
	}
}

// TestFailuresAreErrors: a call on a set that is gone returns the system
// call's error; nothing panics.
func TestFailuresAreErrors(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	bad := &Set{fd: -1, wake: -1}
	_, err = bad.Wait(make([]Event, 1), 0)
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != "epoll_wait" || !errors.Is(err, unix.EBADF) {
		t.Fatalf("Wait on no set: %v, want epoll_wait: EBADF", err)
	}
	if err := bad.Add(0, &Event{}); !errors.Is(err, unix.EBADF) {
		t.Fatalf("Add on no set: %v, want EBADF", err)
	}
}

// TestEdgeRegistration: a socket added edge-triggered with out reports its
// writability under its key and generation; ModEdge without out stops
// that, and data from the peer is reported as readable, once.
func TestEdgeRegistration(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	evs := make([]Event, 4)
	if err := s.AddEdge(fds[0], 3, 9, true); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Wait(evs, -1); n != 1 || err != nil || evs[0].Fd != 3 || evs[0].Pad != 9 || evs[0].Events&Out == 0 {
		t.Fatalf("a writable socket: %d events %+v (%v), want Out under 3/9", n, evs[:n], err)
	}
	if n, _ := s.Wait(evs, 0); n != 0 {
		t.Fatalf("edge-triggered: the same writability reported again (%+v)", evs[:n])
	}
	if err := s.ModEdge(fds[0], 3, 10, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Wait(evs, 0); n != 0 {
		t.Fatalf("not watched for writing, nothing to read: %+v", evs[:n])
	}
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Wait(evs, -1); n != 1 || err != nil || evs[0].Pad != 10 || evs[0].Events&In == 0 || evs[0].Events&Out != 0 {
		t.Fatalf("data from the peer: %d events %+v (%v), want In alone under generation 10", n, evs[:n], err)
	}
	if err := s.Del(fds[0]); err != nil {
		t.Fatal(err)
	}
	if err := s.ModEdge(fds[0], 3, 11, true); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("ModEdge of a socket not in the set: %v, want ENOENT", err)
	}
}
