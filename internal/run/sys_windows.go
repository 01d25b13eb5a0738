package run

import (
	"syscall"
	"time"
)

// cpuTime is the CPU the process has used, kernel and user.
func cpuTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// Filetimes count 100 ns ticks.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

// maxRSS is unknown here (it needs psapi's GetProcessMemoryInfo); the
// generator line then leaves memory out.
func maxRSS() int64 { return 0 }
