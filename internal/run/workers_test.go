package run

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleStackKeepsAtMost: a full stack turns a worker away, so it ends.
func TestIdleStackKeepsAtMost(t *testing.T) {
	s := idleStack[int]{max: 3}
	for i := 0; i < 3; i++ {
		if !s.push(&worker[int]{}) {
			t.Fatalf("push %d refused below the cap", i)
		}
	}
	if s.push(&worker[int]{}) {
		t.Fatal("push past the cap accepted")
	}
	if s.pop() == nil || !s.push(&worker[int]{}) {
		t.Fatal("push after a pop refused")
	}
}

// goroutinesIn counts the goroutines whose stack shows fn; buf must hold
// every goroutine's stack.
func goroutinesIn(buf []byte, fn string) int {
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn)
}

// TestDispatcherShedsIdleWorkers: after a slow stretch of the target makes
// hundreds of scheduled users wait at once, the dispatcher keeps at most
// maxIdleWorkers of the workers that carried them. Before, every one
// stayed, with its stack, for the rest of the run.
func TestDispatcherShedsIdleWorkers(t *testing.T) {
	const users = 2 * maxIdleWorkers
	var answered atomic.Int64
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if answered.Load() < users {
			<-release
		}
		answered.Add(1)
		io.WriteString(w, "ok")
	})
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}, {think: 1h}]}}
load: {grace: 1s, stages: [{duration: 1h, users: 512}]}
`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, p, Options{})
		done <- err
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("the run did not end after its cancel")
		}
	}()
	buf := make([]byte, 16<<20)
	// Users that think are scheduled: all are due at once, and each waits
	// for its answer on a worker of its own.
	safety := time.Now().Add(60 * time.Second)
	for goroutinesIn(buf, "(*closedDriver).step(") < maxIdleWorkers+10 && time.Now().Before(safety) {
		time.Sleep(20 * time.Millisecond)
	}
	held := goroutinesIn(buf, "(*closedDriver).step(")
	close(release)
	for answered.Load() < int64(held) && time.Now().Before(safety) {
		time.Sleep(20 * time.Millisecond)
	}
	var workers int
	for time.Now().Before(safety) {
		if workers = goroutinesIn(buf, "(*closedDriver).schedWorker("); workers <= maxIdleWorkers {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if held <= maxIdleWorkers {
		t.Fatalf("only %d requests were held at once; the test needs more than %d", held, maxIdleWorkers)
	}
	if workers > maxIdleWorkers {
		t.Errorf("%d workers after %d requests held at once were answered, want at most %d", workers, held, maxIdleWorkers)
	}
}
