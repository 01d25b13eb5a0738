package run

import (
	"runtime"
	"sync"
)

// MaxProcs is how a run may change the process's GOMAXPROCS, which only
// main may do (session.Process): nil leaves it as it is.
type MaxProcs struct {
	// Set sets it and returns the old value (runtime.GOMAXPROCS).
	Set func(n int) int
	// Default gives it back to the runtime's own choice, which follows
	// the CPUs and the container's limit (runtime.SetDefaultGOMAXPROCS).
	Default func()
}

// The open model's loops run with a P to spare: GOMAXPROCS one above the
// loops while any open-model loop run is under way, where main allows it
// (Options.MaxProcs: not when the user set GOMAXPROCS). With a P per
// loop, a loop blocked in epoll_wait holds its P, and the runtime's
// monitor hands that P to whatever else is runnable (the ticker, a
// checkpoint, the collector, the GC's workers) at its next 20 µs tick;
// the loop then waits, its wait over, until that goroutine yields or is
// preempted, which takes up to 10 ms. With an idle P the monitor leaves
// a blocked loop's P alone and the rest of the process runs on the
// spare. At 20,000 arrivals/s on one CPU, in alternating 10 s rounds
// against nginx, lateness p99 was 2.1-5.7 ms with the spare against
// 4.3-9.0 ms without, lower in all ten rounds of two runs
// (docs/benchmarks.md). The closed model's loops measured about 5 % more
// CPU with one, so they run without it.
var spare struct {
	mu sync.Mutex
	// runs counts the runs holding the spare; base is GOMAXPROCS before
	// the first of them raised it, mp how it was raised.
	runs, base int
	mp         *MaxProcs
}

// cpus is how many Ps the process has for loops: GOMAXPROCS without the
// spare. A loop each, and the cores a result names.
func cpus() int {
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if spare.runs > 0 {
		return spare.base
	}
	return runtime.GOMAXPROCS(0)
}

// holdSpareP raises GOMAXPROCS by one through mp unless another run holds
// it raised already, and returns the Ps without it and the release,
// which gives it back after the last holder (once per hold, however
// often called). With mp nil nothing changes.
func holdSpareP(mp *MaxProcs) (base int, release func()) {
	if mp == nil {
		return cpus(), func() {}
	}
	spare.mu.Lock()
	defer spare.mu.Unlock()
	if spare.runs == 0 {
		spare.base, spare.mp = runtime.GOMAXPROCS(0), mp
		mp.Set(spare.base + 1)
	}
	spare.runs++
	var once sync.Once
	return spare.base, func() {
		once.Do(func() {
			spare.mu.Lock()
			defer spare.mu.Unlock()
			if spare.runs--; spare.runs == 0 {
				// Back to the runtime's choice, which setting it
				// turned off, rather than to a number frozen now.
				if spare.mp.Default != nil {
					spare.mp.Default()
				} else {
					spare.mp.Set(spare.base)
				}
			}
		})
	}
}
