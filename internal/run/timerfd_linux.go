package run

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleeper waits short intervals accurately. When the Go scheduler
// has nothing else to run it waits in epoll with millisecond resolution, so
// a timer for 50µs can fire a whole millisecond late, and every open-model
// arrival would start late by that much. A timerfd is a file the netpoller
// watches: epoll returns the moment it expires, with no thread blocked and
// no CPU spent spinning.
type preciseSleeper struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newPreciseSleeper() *preciseSleeper {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	return &preciseSleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep waits d. It reports false if the timerfd failed, and the caller
// falls back to a Go timer.
func (p *preciseSleeper) sleep(d time.Duration) bool {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(p.fd, 0, &spec, nil); err != nil {
		return false
	}
	_, err := p.f.Read(p.buf[:])
	return err == nil
}

func (p *preciseSleeper) close() { p.f.Close() }
