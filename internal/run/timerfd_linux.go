package run

import (
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// preciseSleeper waits short intervals accurately. When the Go scheduler
// has nothing else to run it waits in epoll with millisecond resolution, so
// a timer for 50µs can fire a whole millisecond late, and every open-model
// arrival would start late by that much. A timerfd is a file the netpoller
// watches: epoll returns the moment it expires, with no thread blocked and
// no CPU spent spinning.
type preciseSleeper struct {
	fd int
	f  *os.File
	rc syscall.RawConn
	// expiredFn is expired, made once; armed says this wait has set the
	// timer.
	expiredFn func(fd uintptr) bool
	armed     bool
	failed    bool // a read of the timer failed
	spec      unix.ItimerSpec
	buf       [8]byte
}

func newPreciseSleeper() *preciseSleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	p := &preciseSleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
	rc, err := p.f.SyscallConn()
	if err != nil {
		p.f.Close()
		return nil
	}
	p.rc, p.expiredFn = rc, p.expired
	return p
}

// sleep waits d. It reports false if the timerfd failed, and the caller
// falls back to a Go timer. Neither system call can block, so neither is
// announced to the scheduler; and the timer is not read before the poller
// says it expired: reading it first, as a file read does, cost a system
// call per wait that could only answer EAGAIN.
func (p *preciseSleeper) sleep(d time.Duration) bool {
	p.spec.Value = unix.NsecToTimespec(int64(d))
	p.armed, p.failed = false, false
	return p.rc.Read(p.expiredFn) == nil && !p.failed
}

// expired is what the poller calls: once before waiting, and after each
// time the timer turns readable. The first call arms the timer: the
// poller forgets a readiness that came before the read began, so a timer
// armed earlier could expire unseen and the wait would never end.
func (p *preciseSleeper) expired(fd uintptr) bool {
	if !p.armed {
		p.armed = true
		_, _, e := unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&p.spec)), 0, 0, 0)
		p.failed = e != 0
		return p.failed
	}
	for {
		_, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p.buf[0])), uintptr(len(p.buf)))
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		p.failed = e != 0
		return true
	}
}

func (p *preciseSleeper) close() { p.f.Close() }
