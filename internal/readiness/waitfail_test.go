//go:build linux

package readiness

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/epoll"
)

// rearmer is a handler that, as a real one does, re-arms after each
// readiness and keeps what Rearm said.
type rearmer struct {
	r    atomic.Pointer[Reg]
	err  atomic.Pointer[error]
	runs atomic.Int64
}

func (h *rearmer) Ready() {
	h.runs.Add(1)
	if err := h.r.Load().Rearm(); err != nil {
		h.err.Store(&err)
	}
}

// A wait on the epoll set that fails for good used to panic in the
// poller's goroutine, taking down the process with it. Now each watched
// connection's handler runs once more and its Rearm returns the failure,
// and the next connection gets a working poller.
func TestWaitFailureReachesHandlers(t *testing.T) {
	pollMu.Lock()
	saved := thePoll
	set, err := epoll.New()
	if err != nil {
		pollMu.Unlock()
		t.Fatal(err)
	}
	release := make(chan struct{})
	broken := &poller{set: set, wait: func([]epoll.Event, int) (int, error) {
		<-release
		return 0, os.NewSyscallError("epoll_wait", unix.EBADF)
	}}
	thePoll = broken
	pollMu.Unlock()
	defer func() {
		pollMu.Lock()
		if thePoll != broken && thePoll != nil {
			thePoll.set.Close()
		}
		thePoll = saved
		pollMu.Unlock()
		set.Close()
	}()

	c, _ := pair(t)
	h := &rearmer{}
	r, err := Register(c, h, false)
	if err != nil {
		t.Fatal(err)
	}
	h.r.Store(r)
	if err := r.Rearm(); err != nil {
		t.Fatal(err)
	}
	close(release)
	eventually(t, "the handler to hear of the failure", func() bool { return h.err.Load() != nil })
	if got := *h.err.Load(); !errors.Is(got, unix.EBADF) {
		t.Fatalf("Rearm after the failure: %v, want the wait's EBADF", got)
	}
	r.Unregister()

	c2, _ := pair(t)
	r2, err := Register(c2, &counter{}, false)
	if err != nil {
		t.Fatalf("a connection after the failure: %v", err)
	}
	if r2.p == broken {
		t.Fatal("a connection after the failure was put on the failed poller")
	}
	r2.Unregister()
}
