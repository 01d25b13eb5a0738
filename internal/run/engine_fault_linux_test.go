package run

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// epollSets are the descriptors of this process that are epoll sets.
func epollSets() (map[int]bool, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link == "anon_inode:[eventpoll]" {
			out[fd] = true
		}
	}
	return out, nil
}

// A run whose event loops lose their epoll sets mid-load (each turned
// into /dev/null, so epoll_wait fails with EINVAL) ends by itself, marked
// partial with the failure named, and counts no request as answered that
// its server did not answer; nothing panics and nothing waits for the
// profile's hour.
func TestEngineLoopFailureEndsRunPartial(t *testing.T) {
	needLoop(t)
	srv, seen := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1h, users: 4}]}
`)
	before, err := epollSets()
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	nullFD := int(null.Fd())
	broke := make(chan struct{})
	var over atomic.Bool
	defer func() { over.Store(true); <-broke }() // before null closes
	go func() {
		defer close(broke)
		// Once requests flow, every epoll set the run made is broken.
		for seen.Load() < 50 {
			if over.Load() {
				return
			}
			time.Sleep(time.Millisecond)
		}
		now, _ := epollSets()
		for fd := range now {
			if !before[fd] {
				_ = unix.Dup2(nullFD, fd)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, p, Options{Engine: EngineLoop})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if !res.Run.Partial || !strings.Contains(res.Run.PartialReason, "epoll_wait") || strings.Contains(res.Run.PartialReason, "interrupted") {
		t.Fatalf("partial %v, reason %q: want the loop's epoll_wait failure", res.Run.Partial, res.Run.PartialReason)
	}
	var ok int64
	for _, s := range res.Steps {
		ok += s.Successful
	}
	if ok > seen.Load() {
		t.Errorf("%d requests counted successful, the server saw %d", ok, seen.Load())
	}
}
