//go:build linux

package run

import (
	"context"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stampede-load/stampede/internal/sched"
)

// An open model's loops open their first connections before the run's
// clock starts: when the load has started (Handle.Started) they are
// established, waiting in the server's accept queue, none taken yet by
// an accept. Before, the loops dialed them in their first turn, after the
// clock had started, so the schedule's first arrivals were late by all
// the dials: at 20,000/s, 30 to 40 ms for 1,000 connections.
func TestOpenLoopConnectsBeforeTheClockStarts(t *testing.T) {
	needLoop(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	early := make(chan net.Conn, 1024)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	t.Cleanup(func() { srv.Close() })
	p := mustPlan(t, `
target: http://`+ln.Addr().String()+`
scenarios: {s: {steps: [{get: /}]}}
load: {max_in_flight: 1000, stages: [{duration: 300ms, rate: 500/s}]}
`)
	loops := int64(runtime.GOMAXPROCS(0))
	want := int(loops) * sched.Preopen(sched.NewArrivals(p.Load.Stages), loops)
	var h Handle
	done := make(chan error, 1)
	go func() {
		res, err := Run(context.Background(), p, Options{Engine: EngineLoop, Handle: &h, SkipPreflight: true})
		if err == nil && res.Run.Engine != EngineLoop {
			t.Errorf("run.engine = %q, want loop", res.Run.Engine)
		}
		done <- err
	}()
	select {
	case <-h.Started():
	case err := <-done:
		t.Fatalf("the run ended before it started: %v", err)
	}
	got := acceptQueued(t, ln, early)
	close(early)
	go srv.Serve(&queuedListener{Listener: ln, queued: early})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("%d connections established when the clock started, want the %d pre-opened", got, want)
	}
}

// acceptQueued takes the connections waiting in ln's accept queue now,
// without waiting for any, into to.
func acceptQueued(t *testing.T, ln net.Listener, to chan<- net.Conn) int {
	t.Helper()
	rc, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	// The listener's socket does not block: an empty queue is EAGAIN.
	err = rc.Control(func(lfd uintptr) {
		for {
			fd, _, err := unix.Accept4(int(lfd), unix.SOCK_CLOEXEC)
			if err != nil {
				return
			}
			f := os.NewFile(uintptr(fd), "queued")
			c, err := net.FileConn(f)
			f.Close() // FileConn holds a copy
			if err != nil {
				t.Error(err)
				return
			}
			to <- c
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// queuedListener hands out the connections taken from its queue before
// accepting more.
type queuedListener struct {
	net.Listener
	queued <-chan net.Conn
}

func (l *queuedListener) Accept() (net.Conn, error) {
	if c, ok := <-l.queued; ok {
		return c, nil
	}
	return l.Listener.Accept()
}

// fullBacklogAddr is a listener whose accept queue holds one connection
// and that never accepts: further SYNs are dropped, so a connect to it
// stays pending (the pre-open then waits out its whole budget).
func fullBacklogAddr(t *testing.T) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(sa.(*unix.SockaddrInet4).Port)
}

// A segment with a start time (--workers, Kubernetes) opens its
// connections before that time, not after: a target slow to take them
// costs the pre-open its whole 100 ms budget, which once came after the
// start and counted as the segment's late start (late_start_s 0.10, its
// first arrivals skipped as missed). Found by review.
func TestOpenLoopPreopensBeforeTheStartTime(t *testing.T) {
	needLoop(t)
	p := mustPlan(t, `
target: http://`+fullBacklogAddr(t)+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 400ms, rate: 5000/s}], grace: 100ms}
`)
	start := time.Now().Add(time.Second)
	res, err := Run(context.Background(), p, Options{Engine: EngineLoop, SkipPreflight: true, StartAt: start, StartGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.LateStartS > 0 {
		t.Errorf("late_start_s = %v: the pre-open counted as the segment's late start", res.Run.LateStartS)
	}
}

// Connections the server closes between the pre-open and the load's
// first turn (it closes any that sent nothing within 50 ms; the segment
// opened them 250 ms before its start time) are seen closed by that turn
// and redialed, not sent on: no request fails. Before, the loop's first
// turn started arrivals before any wait could see the closes, and the
// requests sent on them failed as reset. Found by review (there with a
// monitor's lead, which waits before the pre-open now).
func TestOpenLoopFirstTurnSeesPreopenedClosed(t *testing.T) {
	needLoop(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 50 * time.Millisecond, Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p := mustPlan(t, `
target: http://`+ln.Addr().String()+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 300ms, rate: 2000/s}]}
`)
	res, err := Run(context.Background(), p, Options{Engine: EngineLoop, SkipPreflight: true, StartAt: time.Now().Add(time.Second), StartGrace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if tot := res.Totals; tot.Requests == 0 || tot.Failed > 0 {
		t.Errorf("%d requests, %d failed %v: want all answered", tot.Requests, tot.Failed, res.Steps[0].ByClass)
	}
}
