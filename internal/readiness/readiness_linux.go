//go:build linux

package readiness

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Supported says whether Register can work here.
func Supported() bool { return true }

// Reg is one socket watched for readiness.
//
// The socket stays in Go's own netpoller as well (a descriptor may be in
// two epoll sets); this set is level-triggered and one-shot, so an event
// fires once per arming, and arming again (EPOLL_CTL_MOD) reports data that
// is already waiting at once: no data that arrived while the handler was
// finishing can be missed. Every epoll_ctl runs inside RawConn.Control,
// which holds the descriptor open for the call, so none can ever touch a
// descriptor number that was closed and handed to another socket.
type Reg struct {
	rc  syscall.RawConn
	h   Handler
	fd  int32
	seq uint32
	// armed is set before each arming and taken by the poller when it
	// dispatches: an event whose registration is not armed (a stale one
	// read just before the socket was removed) is dropped, and the atomic
	// pair is the happens-before edge from the handler that armed to the
	// next one, which the kernel's ordering gives but the race detector
	// cannot see.
	armed atomic.Bool
	gone  atomic.Bool
}

// poller is the process's epoll set and the goroutine that waits on it.
// The goroutine runs only while some socket is registered: the last
// Unregister wakes it through an eventfd and it ends, so a process (or a
// test) with no watched socket has no goroutine here.
type poller struct {
	epfd int
	wake int // eventfd
	mu   sync.Mutex
	regs []*Reg // by descriptor
	n    int    // registered sockets
	seq  uint32
	// running: a loop goroutine exists and will look at n again before
	// it ends.
	running bool
}

var (
	pollMu  sync.Mutex
	thePoll *poller
)

// getPoller makes the process's epoll set on first use. A failure (say at
// the open-file limit) is not kept: the next connection tries again, so a
// process that was short of descriptors for a moment does not hold every
// later connection on a reading goroutine of its own.
func getPoller() (*poller, error) {
	pollMu.Lock()
	defer pollMu.Unlock()
	if thePoll != nil {
		return thePoll, nil
	}
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(fd)
		unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	thePoll = &poller{epfd: fd, wake: wake}
	return thePoll, nil
}

const events = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// Register watches conn's socket and calls h.Ready on a new goroutine when
// it is readable. With armed false it is watched only after the first
// Rearm (the caller has bytes of its own to handle first).
func Register(conn syscall.Conn, h Handler, armed bool) (*Reg, error) {
	p, err := getPoller()
	if err != nil {
		return nil, err
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	r := &Reg{rc: rc, h: h}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		p.mu.Lock()
		p.seq++
		r.fd, r.seq = int32(fd), p.seq
		if int(fd) >= len(p.regs) {
			p.regs = append(p.regs, make([]*Reg, int(fd)+1-len(p.regs)+len(p.regs)/2)...)
		}
		if p.regs[fd] == nil {
			p.n++
		}
		p.regs[fd] = r
		if !p.running {
			p.running = true
			go p.loop()
		}
		p.mu.Unlock()
		ev := unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: r.fd, Pad: int32(r.seq)}
		if armed {
			ev.Events = events
			r.armed.Store(true)
		}
		if e := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); e != nil {
			cerr = os.NewSyscallError("epoll_ctl", e)
			p.forget(r)
		}
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// forget drops r from the table unless the slot went to a newer socket,
// and wakes the loop to end when no socket is left.
func (p *poller) forget(r *Reg) {
	p.mu.Lock()
	if int(r.fd) < len(p.regs) && p.regs[r.fd] == r {
		p.regs[r.fd] = nil
		if p.n--; p.n == 0 && p.running {
			one := [8]byte{1}
			unix.Write(p.wake, one[:])
		}
	}
	p.mu.Unlock()
}

// Rearm asks for the next Ready. Call it from Ready once everything
// readable was handled; data that is already waiting fires at once.
func (r *Reg) Rearm() error {
	if r.gone.Load() {
		return nil
	}
	r.armed.Store(true)
	var cerr error
	err := r.rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: events, Fd: r.fd, Pad: int32(r.seq)}
		if e := unix.EpollCtl(thePoll.epfd, unix.EPOLL_CTL_MOD, int(fd), &ev); e != nil && e != unix.ENOENT {
			cerr = os.NewSyscallError("epoll_ctl", e)
		}
	})
	if err != nil {
		// The socket is closed: nothing to watch.
		return nil
	}
	return cerr
}

// Unregister stops watching. Call it before closing the socket. A Ready
// the waiter claimed just before may still start after it returns; it
// then reads a closed socket, which the handler must take as the end it
// already knows (ending twice does nothing).
func (r *Reg) Unregister() {
	if r.gone.Swap(true) {
		return
	}
	r.armed.Store(false)
	r.rc.Control(func(fd uintptr) {
		unix.EpollCtl(thePoll.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
	// A socket already closed left the epoll set with its last descriptor.
	thePoll.forget(r)
}

// Read reads what the socket holds now without waiting: ErrWouldBlock
// when it holds nothing, io.EOF when the peer finished sending.
func (r *Reg) Read(p []byte) (int, error) {
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EINTR {
				return true
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case rerr == syscall.EAGAIN:
		return 0, ErrWouldBlock
	case rerr != nil:
		return 0, os.NewSyscallError("read", rerr)
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

func (p *poller) loop() {
	evs := make([]unix.EpollEvent, 256)
	var ready []*Reg
	for {
		n, err := unix.EpollWait(p.epfd, evs, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			panic(os.NewSyscallError("epoll_wait", err))
		}
		p.mu.Lock()
		for _, ev := range evs[:n] {
			fd := int(ev.Fd)
			if fd < 0 {
				var b [8]byte
				unix.Read(p.wake, b[:])
				if p.n == 0 {
					// Nothing is registered, so whatever else came in
					// this batch is stale.
					p.running = false
					p.mu.Unlock()
					return
				}
				continue
			}
			if fd < len(p.regs) {
				if r := p.regs[fd]; r != nil && r.seq == uint32(ev.Pad) {
					ready = append(ready, r)
				}
			}
		}
		p.mu.Unlock()
		for i, r := range ready {
			if r.armed.CompareAndSwap(true, false) {
				go r.h.Ready()
			}
			ready[i] = nil
		}
		ready = ready[:0]
	}
}
