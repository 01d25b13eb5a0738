//go:build unix

package run

import (
	"syscall"
	"time"
)

// cpuTime is the CPU the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageMaxRSS is the peak resident memory getrusage reports, in bytes.
// On Linux it can be the parent's: a child started with vfork (as Go's
// os/exec does) inherits the parent's high-water mark at exec, so
// maxRSS prefers the kernel's figure for this process's own memory.
func rusageMaxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss * maxrssUnit
}
