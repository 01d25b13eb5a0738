package vu

import (
	"fmt"
	"runtime/metrics"
	"sync"
	"time"
)

// A script's memory is bounded as its time is: JavaScript has no limit of
// its own, and a step doubling a string (s = s + s) reached Go's fatal
// "out of memory" (exit 2, a goroutine dump, no result) long before its
// time limit. One goroutine watches the heap while script calls run, and
// stops a call under which it grew past scriptMemoryBudget: a script step
// takes microseconds, so no call of its own grows the heap by hundreds of
// megabytes unless it is running away.

// scriptMemoryBudget is how much the heap may grow while one call runs.
const scriptMemoryBudget = 128 << 20

// memoryInterrupt is what a call stopped for memory is interrupted with.
type memoryInterrupt struct{}

// scriptMemoryMessage is the failure of a call stopped for memory.
var scriptMemoryMessage = fmt.Sprintf("script grew the memory by more than %d MiB in one call (a string or array without bound?) and was stopped", scriptMemoryBudget>>20)

// memWatchEvery is how often the heap is read while a call runs: a string
// that doubles takes longer to copy than this at every size where the
// budget matters.
const memWatchEvery = 2 * time.Millisecond

var memWatch struct {
	once   sync.Once
	sample []metrics.Sample
}

// heapBytes is the memory in heap objects, live or not yet collected.
func heapBytes() int64 {
	s := memWatch.sample
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

func startMemWatch() {
	memWatch.once.Do(func() {
		memWatch.sample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		go memWatcher()
	})
}

// memWatcher reads the heap when a call is under way, notes it for each
// call at the first look (memBase), and interrupts a call under which it
// grew past the budget. It looks as often idle as busy: a string doubling
// from one byte reaches hundreds of megabytes in a fraction of a second,
// and a late first look would take most of that as the call's base.
func memWatcher() {
	for {
		active := false
		var heap int64
		watched.mu.Lock()
		for _, vm := range watched.vms {
			t := vm.started.Load()
			if t == 0 {
				continue
			}
			if !active {
				active, heap = true, heapBytes()
			}
			vm.mu.Lock()
			switch {
			case vm.started.Load() != t: // it ended meanwhile
			case vm.memCall != t:
				vm.memCall, vm.memBase = t, heap
			case heap-vm.memBase > scriptMemoryBudget:
				vm.rt.Interrupt(memoryInterrupt{})
			}
			vm.mu.Unlock()
		}
		watched.mu.Unlock()
		time.Sleep(memWatchEvery)
	}
}
