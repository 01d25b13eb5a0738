package run

import (
	"context"
	"runtime"
	"testing"
)

// testMaxProcs changes GOMAXPROCS as main's Process lets a run.
var testMaxProcs = &MaxProcs{Set: runtime.GOMAXPROCS, Default: runtime.SetDefaultGOMAXPROCS}

// Runs that overlap share one spare P: GOMAXPROCS is one above the
// loops' Ps while any holds it and back where it was after the last
// release, however the holds and releases interleave, and a release
// called twice gives back once.
func TestSparePIsOneAcrossOverlappingRuns(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	b1, release1 := holdSpareP(testMaxProcs)
	b2, release2 := holdSpareP(testMaxProcs)
	if b1 != before || b2 != before || cpus() != before {
		t.Errorf("Ps without the spare: %d, %d, cpus %d; want %d", b1, b2, cpus(), before)
	}
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("GOMAXPROCS with two holds: %d, want %d", got, before+1)
	}
	release1()
	release1()
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Errorf("GOMAXPROCS with one hold left: %d, want %d", got, before+1)
	}
	release2()
	if got := runtime.GOMAXPROCS(0); got != before || cpus() != before {
		t.Errorf("GOMAXPROCS after the last release: %d (cpus %d), want %d", got, cpus(), before)
	}
}

// An open-model run on the loops holds the spare P while its load runs
// and gives it back when it ends; its result names the cores without it.
// Before, its loops had a P each and nothing to spare.
func TestOpenLoopRunHoldsASpareP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	during, cores := maxProcsDuringLoad(t, testMaxProcs)
	if during != before+1 || cores != before {
		t.Errorf("GOMAXPROCS %d during the load, result cores %d; want %d and %d", during, cores, before+1, before)
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
	if during, cores := maxProcsDuringLoad(t, nil); during != before || cores != before {
		t.Errorf("GOMAXPROCS %d during the load without MaxProcs, result cores %d; want %d as set", during, cores, before)
	}
}

// maxProcsDuringLoad runs a short open model on the loops with mp and
// returns GOMAXPROCS while its load ran and the cores its result names.
func maxProcsDuringLoad(t *testing.T, mp *MaxProcs) (during, cores int) {
	t.Helper()
	needLoop(t)
	srv, _ := countingServer(t, nil)
	p := mustPlan(t, `
target: `+srv.URL+`
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
	return during, cores
}
