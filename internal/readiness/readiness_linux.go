//go:build linux

package readiness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/epoll"
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
	p   *poller
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
// Unregister wakes it and it ends, so a process (or a test) with no
// watched socket has no goroutine here.
type poller struct {
	set  *epoll.Set
	wait func([]epoll.Event, int) (int, error) // set.Wait; a test's stand-in
	mu   sync.Mutex
	regs []*Reg // by descriptor
	n    int    // registered sockets
	seq  uint32
	// running: a loop goroutine exists and will look at n again before
	// it ends.
	running bool
	// err is why the wait failed for good; every registration's next
	// Rearm returns it, and new connections get a new poller.
	err error
}

var (
	pollMu  sync.Mutex
	thePoll *poller
)

// getPoller makes the process's epoll set on first use, and again after
// the one in use failed. A failure to make one (say at the open-file
// limit) is not kept: the next connection tries again, so a process that
// was short of descriptors for a moment does not hold every later
// connection on a reading goroutine of its own.
func getPoller() (*poller, error) {
	pollMu.Lock()
	defer pollMu.Unlock()
	if thePoll != nil && thePoll.failed() == nil {
		return thePoll, nil
	}
	set, err := epoll.New()
	if err != nil {
		return nil, err
	}
	thePoll = &poller{set: set, wait: set.Wait}
	return thePoll, nil
}

func (p *poller) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
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
	r := &Reg{p: p, rc: rc, h: h}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		if cerr = p.add(r, int32(fd)); cerr != nil {
			return
		}
		ev := unix.EpollEvent{Events: unix.EPOLLONESHOT, Fd: r.fd, Pad: int32(r.seq)}
		if armed {
			ev.Events = events
			r.armed.Store(true)
		}
		if cerr = p.set.Add(int(fd), &ev); cerr != nil {
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

// add puts r in the table under fd, with a new sequence number, and
// starts the loop if none runs; it fails once the poller has.
func (p *poller) add(r *Reg, fd int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	p.seq++
	r.fd, r.seq = fd, p.seq
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
	return nil
}

// forget drops r from the table unless the slot went to a newer socket,
// and wakes the loop to end when no socket is left.
func (p *poller) forget(r *Reg) {
	p.mu.Lock()
	if int(r.fd) < len(p.regs) && p.regs[r.fd] == r {
		p.regs[r.fd] = nil
		if p.n--; p.n == 0 && p.running {
			// A wake that cannot be written leaves the loop waiting for
			// the next registration, which it then serves: nothing lost.
			_ = p.set.Wake()
		}
	}
	p.mu.Unlock()
}

// Rearm asks for the next Ready. Call it from Ready once everything
// readable was handled; data that is already waiting fires at once. After
// the poller failed it returns why, and the socket is no longer watched.
func (r *Reg) Rearm() error {
	if r.gone.Load() {
		return nil
	}
	if err := r.p.failed(); err != nil {
		return err
	}
	r.armed.Store(true)
	var cerr error
	err := r.rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: events, Fd: r.fd, Pad: int32(r.seq)}
		if e := r.p.set.Mod(int(fd), &ev); e != nil && !errors.Is(e, unix.ENOENT) {
			cerr = e
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
	_ = r.rc.Control(func(fd uintptr) {
		_ = r.p.set.Del(int(fd))
	})
	// A socket already closed left the epoll set with its last descriptor.
	r.p.forget(r)
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
	evs := make([]epoll.Event, 256)
	var ready []*Reg
	for {
		n, err := p.wait(evs, -1)
		if err != nil {
			p.fail(err)
			return
		}
		var more bool
		if ready, more = p.claim(evs[:n], ready); !more {
			return
		}
		dispatch(ready)
		ready = ready[:0]
	}
}

// claim appends to ready the registrations whose events came; false
// means nothing is registered any more and the loop has ended.
func (p *poller) claim(evs []epoll.Event, ready []*Reg) ([]*Reg, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ev := range evs {
		fd := int(ev.Fd)
		if ev.Fd == epoll.WakeKey {
			p.set.ClearWake()
			if p.n == 0 {
				// Nothing is registered, so whatever else came in this
				// batch is stale.
				p.running = false
				return ready, false
			}
			continue
		}
		if fd >= 0 && fd < len(p.regs) {
			if r := p.regs[fd]; r != nil && r.seq == uint32(ev.Pad) {
				ready = append(ready, r)
			}
		}
	}
	return ready, true
}

// dispatch starts the handler of each registration that is still armed.
func dispatch(ready []*Reg) {
	for i, r := range ready {
		if r.armed.CompareAndSwap(true, false) {
			go r.h.Ready()
		}
		ready[i] = nil
	}
}

// fail ends the loop on a wait that cannot go on. It does not panic in
// this goroutine, which no caller could recover: every armed
// registration's handler runs once more, reads what its socket holds and
// gets err from Rearm, so each connection ends with the reason; new
// connections get a new poller. The set is left open: a registration
// still to be unregistered must not touch a descriptor number that
// another file may have been given.
func (p *poller) fail(err error) {
	p.mu.Lock()
	p.err, p.running = err, false
	regs := make([]*Reg, 0, p.n)
	for _, r := range p.regs {
		if r != nil {
			regs = append(regs, r)
		}
	}
	p.mu.Unlock()
	dispatch(regs)
}
