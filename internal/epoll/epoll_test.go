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
