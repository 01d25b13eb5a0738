//go:build linux

package run

import (
	"context"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"

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
