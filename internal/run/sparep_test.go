package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
)

// testMaxProcs changes GOMAXPROCS as main's Process lets a run, and gives
// it back to what the test started with (under go test -cpu or a
// GOMAXPROCS in the environment the runtime's own choice is another).
func testMaxProcs(t *testing.T) *MaxProcs {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	return &MaxProcs{Set: runtime.GOMAXPROCS, Default: func() { runtime.GOMAXPROCS(before) }}
}

// Runs that overlap share one spare P: it is raised once for the first
// hold and given back once, to the runtime's own choice (Default), after
// the last release, however the holds and releases interleave, and a
// release called twice gives back once.
func TestSparePIsOneAcrossOverlappingRuns(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	var sets []int
	defaults := 0
	mp := &MaxProcs{Set: func(n int) int { sets = append(sets, n); return 0 }, Default: func() { defaults++ }}
	b1, release1 := holdSpareP(mp)
	b2, release2 := holdSpareP(mp)
	if b1 != before || b2 != before || cpus() != before {
		t.Errorf("Ps without the spare: %d, %d, cpus %d; want %d", b1, b2, cpus(), before)
	}
	release1()
	release1()
	if len(sets) != 1 || sets[0] != before+1 || defaults != 0 {
		t.Errorf("with one hold left: set %v, given back %d times; want set to %d once, not given back", sets, defaults, before+1)
	}
	release2()
	if len(sets) != 1 || defaults != 1 || cpus() != before {
		t.Errorf("after the last release: set %v, given back %d times (cpus %d); want given back once", sets, defaults, cpus())
	}
}

// An open-model run on the loops holds the spare P while its load runs
// and gives it back when its load ends, before its teardown; its result
// names the cores without it. Before, its loops had a P each and nothing
// to spare; then, for a while, the spare was held through the teardown.
func TestOpenLoopRunHoldsASpareP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	during, cores, teardown := maxProcsDuringLoad(t, testMaxProcs(t))
	if during != before+1 || cores != before || teardown != before {
		t.Errorf("GOMAXPROCS %d during the load, %d during the teardown, result cores %d; want %d, %d and %d", during, teardown, cores, before+1, before, before)
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Errorf("GOMAXPROCS %d after the run, want %d", got, before)
	}
}

// Without MaxProcs (main's way of saying the user set GOMAXPROCS) the
// run leaves GOMAXPROCS alone and its loops take every P. Before, the
// spare was added whatever the user had set.
func TestOpenLoopRunKeepsAUsersGOMAXPROCS(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if during, cores, _ := maxProcsDuringLoad(t, nil); during != before || cores != before {
		t.Errorf("GOMAXPROCS %d during the load without MaxProcs, result cores %d; want %d as set", during, cores, before)
	}
}

// maxProcsDuringLoad runs a short open model on the loops with mp and a
// teardown, and returns GOMAXPROCS while its load ran and while its
// teardown's request was answered, and the cores its result names.
func maxProcsDuringLoad(t *testing.T, mp *MaxProcs) (during, cores, teardown int) {
	t.Helper()
	needLoop(t)
	var td atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			td.Store(int64(runtime.GOMAXPROCS(0)))
		}
	}))
	t.Cleanup(srv.Close)
	p := mustPlan(t, `
target: `+srv.URL+`
teardown:
  - name: td
    delete: /td
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 300ms, rate: 50/s}]}
`)
	var h Handle
	done := make(chan error, 1)
	go func() {
		res, err := Run(context.Background(), p, Options{Engine: EngineLoop, Handle: &h, MaxProcs: mp})
		if err == nil {
			cores = res.Generator.Cores
		}
		done <- err
	}()
	select {
	case <-h.Started():
	case err := <-done:
		t.Fatalf("the run ended before it started: %v", err)
	}
	during = runtime.GOMAXPROCS(0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return during, cores, int(td.Load())
}
