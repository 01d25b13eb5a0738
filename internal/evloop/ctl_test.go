//go:build linux

package evloop

import (
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// injectCtl makes the n-th epoll_ctl of the loops' sockets meet errno
// (ctlFault) for the rest of the test.
func injectCtl(t *testing.T, n int64, errno unix.Errno) {
	t.Helper()
	var calls atomic.Int64
	ctlFault = func() error {
		if calls.Add(1) == n {
			return os.NewSyscallError("epoll_ctl", errno)
		}
		return nil
	}
	t.Cleanup(func() { ctlFault = nil })
}

// A socket the set does not take for want of room (ENOSPC: past
// max_user_watches) fails its request alone, classed as the goroutine
// engine's dial that meets it in the runtime's poller (other), and the
// run goes on: before, any epoll_ctl error failed the loop and stopped
// the whole run.
func TestLoopCtlNoSpaceFailsOnlyItsRequest(t *testing.T) {
	srv := newFixedServer(t)
	srv.target.Store(50)
	injectCtl(t, 1, unix.ENOSPC)
	var failures atomic.Int64
	rec, stop := startLoopFail(t, srv, 1, func(error) { failures.Add(1) })
	select {
	case <-srv.reached:
	case <-time.After(30 * time.Second):
		// A loop that failed let its user go: no more answers come.
	}
	stop()
	if n := failures.Load(); n != 0 {
		t.Fatalf("the loop failed %d times, want the request alone to fail", n)
	}
	step := rec.Snapshot().Steps[0]
	if step.ByClass["other"] != 1 || step.Requests-1 != srv.n.Load() {
		t.Fatalf("recorded %d requests %v, want the server's %d and one failed as other", step.Requests, step.ByClass, srv.n.Load())
	}
	if len(step.Errors) != 1 || !strings.Contains(step.Errors[0].Message, "dial tcp") || !strings.Contains(step.Errors[0].Message, "no space left on device") {
		t.Fatalf("errors %+v, want the dial's ENOSPC", step.Errors)
	}
}

// EBADF from epoll_ctl says the set is broken: the loop fails and tells
// the run, once.
func TestLoopCtlBadSetFailsTheLoop(t *testing.T) {
	srv := newFixedServer(t)
	injectCtl(t, 1, unix.EBADF)
	var mu sync.Mutex
	var failures []error
	told := make(chan struct{}, 1)
	_, stop := startLoopFail(t, srv, 4, func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
		told <- struct{}{}
	})
	select {
	case <-told:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not fail on EBADF from epoll_ctl")
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(failures) != 1 || !errors.Is(failures[0], unix.EBADF) || !strings.Contains(failures[0].Error(), "epoll_ctl") {
		t.Fatalf("Fail was told %v, want one epoll_ctl EBADF", failures)
	}
}

// heldLoop is a loop that the test drives on its own goroutine (no run),
// for one user of a two-step scenario against srv.
func heldLoop(t *testing.T, srv *fixedServer) (*loop, *conn, *metrics.Recorder, *atomic.Int64) {
	t.Helper()
	p, err := plan.Parse("b.yaml", []byte(`
target: http://`+srv.ln.Addr().String()+`
scenarios: {s: {steps: [{get: /a}, {get: /b}]}}
load: {stages: [{duration: 1h, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := vu.Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	var left atomic.Int64
	e := &Engine{cfg: Config{Prog: prog, Rec: rec, Soft: make(chan struct{}), InFlight: &rec.InFlight,
		Hold: func() {}, Release: func() {}, Left: func() { left.Add(1) }},
		scens: map[*vu.Scenario]*scenario{}, base: time.Now()}
	addr, err := e.render()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.resolve(addr); err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(e, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.closeFDs)
	tr := e.transportOn(l)
	u := prog.NewUser(1, tr, rec)
	c := &conn{fd: -1, u: u, sc: e.scens[prog.ScenarioFor(0)], resp: u.LoopResponse()}
	l.add(c)
	return l, c, rec, &left
}

// A step that comes due after the loop failed (its user's last step
// ended well in the batch the failure came in) never goes on the wire:
// it is counted unfinished, as a request the run's end cut off, not as a
// request that failed, and the user leaves.
func TestLoopStepAfterFailureIsUnfinished(t *testing.T) {
	srv := newFixedServer(t)
	l, c, rec, left := heldLoop(t, srv)
	c.u.LoopBegin()
	c.goOn, c.pc = true, 0 // the first step answered, the second is next
	l.fail(os.NewSyscallError("epoll_ctl", unix.EINVAL))
	l.runq = append(l.runq, c)
	l.drain()
	l.publish()
	snap := rec.Snapshot()
	b := snap.Steps[1]
	if b.ByClass["interrupted"] != 1 || snap.Totals.Failed != 1 || len(b.Errors) != 1 || b.Errors[0].Class != "interrupted" {
		t.Fatalf("second step %v %+v, want one unfinished (interrupted) and nothing failed", b.ByClass, b.Errors)
	}
	if left.Load() != 1 || l.users != 0 || rec.InFlight.Load() != 0 || l.busy != 0 {
		t.Fatalf("%d left, %d users, %d in flight (%d busy), want the user gone and nothing in flight", left.Load(), l.users, rec.InFlight.Load(), l.busy)
	}
}

// The requests the failure cuts off are failed under what each was
// doing: a dial, a write or a read, as a timeout names them; before,
// every one said read.
func TestLoopFailureNamesWhatEachRequestWasDoing(t *testing.T) {
	for state, op := range map[uint8]string{stConnecting: "dial tcp", stWriting: "write tcp", stReading: "read tcp"} {
		srv := newFixedServer(t)
		l, c, rec, _ := heldLoop(t, srv)
		c.u.LoopBegin()
		c.state, c.sent = state, time.Now()
		l.inflight++
		l.busy++
		l.fail(os.NewSyscallError("epoll_wait", unix.EINVAL))
		l.endAll()
		l.drain()
		l.publish()
		errs := rec.Snapshot().Steps[0].Errors
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Message, op) {
			t.Errorf("state %d: errors %+v, want one %q", state, errs, op)
		}
	}
}
