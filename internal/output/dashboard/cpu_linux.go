package dashboard

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// timed runs f and says how much CPU it took: its thread's own CPU time,
// so on a busy machine the waits for a core, which cost the generator
// nothing, do not stretch the render budget and freeze the page.
func timed(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Rusage
	start := time.Now()
	if unix.Getrusage(unix.RUSAGE_THREAD, &a) != nil {
		f()
		return time.Since(start)
	}
	f()
	if unix.Getrusage(unix.RUSAGE_THREAD, &b) != nil {
		return time.Since(start)
	}
	return time.Duration(b.Utime.Nano() + b.Stime.Nano() - a.Utime.Nano() - a.Stime.Nano())
}
