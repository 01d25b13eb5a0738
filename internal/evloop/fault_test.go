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

// epollFDs are the descriptors of this process that are epoll sets.
func epollFDs(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		var fd int
		for _, ch := range e.Name() {
			fd = fd*10 + int(ch-'0')
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == "anon_inode:[eventpoll]" {
			out[fd] = true
		}
	}
	return out
}

// A loop whose epoll set fails under it (its descriptor turned into
// /dev/null, so epoll_wait answers EINVAL) tells the run through Fail, with
// the system call named, ends the requests it held as failed and lets every
// user and itself go: before, a failed wait was taken for EINTR, and the
// loop waited again at once, forever, with its users' requests in flight.
func TestLoopFailureEndsTheRun(t *testing.T) {
	srv := newFixedServer(t)
	srv.target.Store(200)
	p, err := plan.Parse("b.yaml", []byte(`
target: http://`+srv.ln.Addr().String()+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1h, users: 8}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := vu.Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	soft := make(chan struct{}) // never closed: the failure alone ends the loop
	var wg sync.WaitGroup
	var inflight, left atomic.Int64
	var mu sync.Mutex
	var failures []error
	before := epollFDs(t)
	e, err := New(Config{Prog: prog, Rec: rec, Soft: soft, Loops: 1,
		Hold: func() { wg.Add(1) }, Release: wg.Done, Left: func() { left.Add(1) }, InFlight: &inflight,
		Fail: func(err error) { mu.Lock(); failures = append(failures, err); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	const users = 8
	for id := int64(1); id <= users; id++ {
		tr := e.NewTransport()
		e.Start(prog.NewUser(id, tr, rec), tr, prog.ScenarioFor(id-1), nil)
	}
	<-srv.reached

	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	broken := 0
	for fd := range epollFDs(t) {
		if !before[fd] {
			if err := unix.Dup2(int(null.Fd()), fd); err != nil {
				t.Fatal(err)
			}
			broken++
		}
	}
	if broken != 1 {
		t.Fatalf("found %d new epoll sets, want the loop's one", broken)
	}
	e.loops[0].wake() // a wait in progress holds the old set until it returns

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		// The server's cleanup closes the connections the hung loop
		// holds, so this fails now rather than at the package's timeout.
		t.Fatal("the loop did not end after its epoll set failed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failures) != 1 || !errors.Is(failures[0], unix.EINVAL) || !strings.Contains(failures[0].Error(), "epoll_wait") {
		t.Fatalf("Fail was told %v, want one epoll_wait EINVAL", failures)
	}
	if n := left.Load(); n != users {
		t.Errorf("%d users left, want %d", n, users)
	}
	if n := inflight.Load(); n != 0 {
		t.Errorf("%d requests in flight after the loop ended", n)
	}
	// Every request sent is counted: answered ones as they were, those
	// the failure cut off as failed, none lost.
	tot := rec.Snapshot().Totals
	if tot.Requests < srv.n.Load() || tot.Requests-tot.Failed > srv.n.Load() {
		t.Errorf("recorded %d requests (%d failed), the server answered %d", tot.Requests, tot.Failed, srv.n.Load())
	}
}
