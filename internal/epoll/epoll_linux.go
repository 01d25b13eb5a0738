//go:build linux

package epoll

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Event is one readiness report: Events is the EPOLL* mask, Fd and Pad
// are the caller's key as given to Add or Mod.
type Event = unix.EpollEvent

// The event bits a caller asks for and reads back.
const (
	In    = unix.EPOLLIN
	Out   = unix.EPOLLOUT
	RDHup = unix.EPOLLRDHUP // the peer closed or shut down its writing
	Hup   = unix.EPOLLHUP
	Err   = unix.EPOLLERR
	// Edge makes a registration edge-triggered: each change of readiness
	// is reported once, so a caller reads until EAGAIN.
	Edge = unix.EPOLLET
)

// Set is an epoll set and the eventfd that wakes its waiter.
type Set struct {
	fd   int
	wake int
}

// New makes an epoll set with its wake-up eventfd registered under
// WakeKey (level-triggered: it reports until ClearWake).
func New() (*Set, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	s := &Set{fd: fd, wake: wake}
	if err := s.Add(wake, &Event{Events: unix.EPOLLIN, Fd: WakeKey}); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Add puts fd in the set with the events and key in ev.
func (s *Set) Add(fd int, ev *Event) error { return s.ctl(unix.EPOLL_CTL_ADD, fd, ev) }

// Mod changes fd's events and key (and re-arms a one-shot registration).
func (s *Set) Mod(fd int, ev *Event) error { return s.ctl(unix.EPOLL_CTL_MOD, fd, ev) }

// Del takes fd out of the set.
func (s *Set) Del(fd int) error { return s.ctl(unix.EPOLL_CTL_DEL, fd, nil) }

// AddEdge puts a socket in the set edge-triggered, watched for reading
// and the peer's close, and for writing when out; key and gen come back as
// the events' Fd and Pad (gen tells a reused key's old socket from its new
// one).
func (s *Set) AddEdge(fd int, key, gen int32, out bool) error {
	ev := edgeEvent(key, gen, out)
	return s.ctl(unix.EPOLL_CTL_ADD, fd, &ev)
}

// ModEdge sets whether a socket added by AddEdge is watched for writing:
// a writer whose data the socket did not take at once turns it on, and
// off once written, so that a socket that can always be written does not
// report at every wait.
func (s *Set) ModEdge(fd int, key, gen int32, out bool) error {
	ev := edgeEvent(key, gen, out)
	return s.ctl(unix.EPOLL_CTL_MOD, fd, &ev)
}

func edgeEvent(key, gen int32, out bool) Event {
	ev := Event{Events: In | RDHup | Edge, Fd: key, Pad: gen}
	if out {
		ev.Events |= Out
	}
	return ev
}

func (s *Set) ctl(op, fd int, ev *Event) error {
	if err := unix.EpollCtl(s.fd, op, fd, ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// Wait fills evs with ready events, waiting at most ms milliseconds (-1:
// without limit), and allocates nothing: a loop passes the same buffer to
// every wait. The wait goes through the runtime's system-call path, so a
// garbage collection or another goroutine never waits for its thread. A
// wait interrupted by a signal returns 0 events and no error; any other
// failure is returned.
func (s *Set) Wait(evs []Event, ms int) (int, error) {
	n, err := unix.EpollWait(s.fd, evs, ms)
	switch {
	case err == unix.EINTR:
		return 0, nil
	case err != nil:
		return 0, os.NewSyscallError("epoll_wait", err)
	}
	return n, nil
}

// Wake makes a Wait return with a WakeKey event. Safe from any goroutine
// while the set is open.
func (s *Set) Wake() error {
	one := [8]byte{1}
	if _, err := unix.Write(s.wake, one[:]); err != nil && err != unix.EAGAIN {
		// EAGAIN: the counter is full, so a wake is pending anyway.
		return os.NewSyscallError("write", err)
	}
	return nil
}

// ClearWake consumes pending wakes, so that the WakeKey event stops
// reporting.
func (s *Set) ClearWake() {
	var b [8]byte
	_, _ = unix.Read(s.wake, b[:])
}

// Close closes the set and its eventfd. No call may use the set after.
func (s *Set) Close() error {
	err := unix.Close(s.fd)
	if e := unix.Close(s.wake); err == nil {
		err = e
	}
	if err != nil {
		return os.NewSyscallError("close", err)
	}
	return nil
}

// Timer is a timerfd on the monotonic clock, non-blocking: add FD to a
// Set (or to Go's netpoller through os.NewFile) to be told when it
// expires. Whoever holds FD closes it (unix.Close, or the os.File's
// Close), once.
type Timer struct {
	fd   int
	spec unix.ItimerSpec
}

// NewTimer makes a disarmed timer.
func NewTimer() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	return &Timer{fd: fd}, nil
}

// FD is the timer's descriptor, readable once it expired.
func (t *Timer) FD() int { return t.fd }

// Set arms the timer to expire once, ns nanoseconds from now; ns < 1 is
// taken as 1, so a time already due fires at once. Neither Set nor Clear
// can block, so both are raw system calls, not announced to the Go
// scheduler: a loop that arms a timer per wait pays no scheduler hand-off.
func (t *Timer) Set(ns int64) error {
	t.spec.Value = unix.NsecToTimespec(max(ns, 1))
	_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	if e != 0 {
		return os.NewSyscallError("timerfd_settime", e)
	}
	return nil
}

// Clear consumes an expiry, so that the descriptor stops reporting
// readable: true when the timer had expired, false (and no error) when it
// has not yet.
func (t *Timer) Clear() (bool, error) {
	var b [8]byte
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(t.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false, nil
		case 0:
			return n == 8, nil
		}
		return false, os.NewSyscallError("read", e)
	}
}
