package lang

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

// scriptMemoryBudget is how much the heap may grow while one call runs,
// beyond a quarter of the heap the call began with (callBudget). 64 MiB,
// not more: s = s + s is one instruction that allocates the whole next
// string, so a watch that looks a doubling late (a loaded machine) lets the
// string double once more before the interrupt is seen, and from 128 MiB
// that took the process past 512 MB.
const scriptMemoryBudget = 64 << 20

// callBudget is the growth allowed under a call that began with base bytes
// of heap: the run keeps the GC at 10-25 %, so a large heap gathers that
// much garbage from the other users between collections, and that growth
// is not the call's.
func callBudget(base int64) int64 { return scriptMemoryBudget + base/4 }

// maxScriptString bounds the strings the builtins that make one string in
// a single allocation (repeat, padStart, padEnd) may make, in characters:
// the heap watch stops a call between instructions, so it cannot stop
// one allocation of gigabytes.
const maxScriptString = 32 << 20

// boundStrings wraps those builtins in a runtime with the bound.
var boundStrings = fmt.Sprintf(`(function (lim) {
  const P = String.prototype;
  const check = (n) => {
    if (n > lim) throw new RangeError("a string of " + n + " characters is more than a script may make (" + lim + ")");
  };
  const wrap = (name, size) => {
    const orig = P[name];
    Object.defineProperty(P, name, {writable: true, configurable: true, value: function (...args) {
      check(size(String(this), args));
      return orig.apply(this, args);
    }});
  };
  wrap("repeat", (s, a) => s.length * Math.max(0, Math.floor(Number(a[0])) || 0));
  wrap("padStart", (s, a) => Number(a[0]) || 0);
  wrap("padEnd", (s, a) => Number(a[0]) || 0);
})(%d);`, maxScriptString)

// memoryInterrupt is what a call stopped for memory is interrupted with.
type memoryInterrupt struct{}

// scriptMemoryMessage is the failure of a call stopped for memory.
var scriptMemoryMessage = fmt.Sprintf("script grew the memory by more than %d MiB (and a quarter of the heap it began with) in one call (a string or array without bound?) and was stopped", scriptMemoryBudget>>20)

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
			case heap-vm.memBase > callBudget(vm.memBase):
				vm.rt.Interrupt(memoryInterrupt{})
			}
			vm.mu.Unlock()
		}
		watched.mu.Unlock()
		time.Sleep(memWatchEvery)
	}
}
