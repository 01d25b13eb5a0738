package run

import (
	"os"
	"syscall"
	"time"

	"github.com/stampede-load/stampede/internal/epoll"
)

// preciseSleeper waits short intervals accurately. When the Go scheduler
// has nothing else to run it waits in epoll with millisecond resolution, so
// a timer for 50µs can fire a whole millisecond late, and every open-model
// arrival would start late by that much. A timerfd is a file the netpoller
// watches: epoll returns the moment it expires, with no thread blocked and
// no CPU spent spinning.
type preciseSleeper struct {
	t  *epoll.Timer
	f  *os.File // owns t's descriptor
	rc syscall.RawConn
	// expiredFn is expired, made once; armed says this wait has set the
	// timer.
	expiredFn func(fd uintptr) bool
	armed     bool
	failed    bool // a read of the timer failed
	wait      time.Duration
}

func newPreciseSleeper() *preciseSleeper {
	t, err := epoll.NewTimer()
	if err != nil {
		return nil
	}
	p := &preciseSleeper{t: t, f: os.NewFile(uintptr(t.FD()), "timerfd")}
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
	p.wait = d
	p.armed, p.failed = false, false
	return p.rc.Read(p.expiredFn) == nil && !p.failed
}

// expired is what the poller calls: once before waiting, and after each
// time the timer turns readable. The first call arms the timer: the
// poller forgets a readiness that came before the read began, so a timer
// armed earlier could expire unseen and the wait would never end.
func (p *preciseSleeper) expired(uintptr) bool {
	if !p.armed {
		p.armed = true
		p.failed = p.t.Set(int64(p.wait)) != nil
		return p.failed
	}
	fired, err := p.t.Clear()
	p.failed = err != nil
	return fired || p.failed
}

func (p *preciseSleeper) close() { p.f.Close() }
