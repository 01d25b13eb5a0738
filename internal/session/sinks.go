package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// pump streams the executor's snapshots to the sinks, once per
// SampleEvery, on its own goroutine: a snapshot is built from the run's
// recorders without stopping the load, and a sink that is slow to take it
// delays only the next snapshot. The returned function stops the pump and
// waits for it.
func (s *Session) pump(e Executor) (stop func()) {
	sn, ok := e.(Snapshotter)
	if !ok || len(s.o.Sinks) == 0 {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.o.SampleEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			snap := sn.Snapshot("")
			if snap == nil {
				continue
			}
			for _, k := range s.o.Sinks {
				k.Sample(snap)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
		})
	}
}

// closeSinks gives every sink the final result; their errors are
// warnings, since the result file is what the run is judged by. With a
// limit above zero it waits no longer than that for them.
func (s *Session) closeSinks(final *result.Result, limit time.Duration) {
	if len(s.o.Sinks) == 0 {
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var warnings []string
	for _, k := range s.o.Sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.Close(final); err != nil {
				mu.Lock()
				warnings = append(warnings, fmt.Sprintf("stampede: warning: output %s: %v", k.Name(), err))
				mu.Unlock()
			}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	if limit > 0 {
		select {
		case <-all:
		case <-time.After(limit):
		}
	} else {
		<-all
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range warnings {
		fmt.Fprintln(s.o.Stderr, w)
	}
}
