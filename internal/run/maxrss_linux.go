package run

import (
	"bytes"
	"os"
	"strconv"
)

// getrusage reports ru_maxrss in KiB on Linux.
const maxrssUnit = 1024

// maxRSS is the process's peak resident memory in bytes: VmHWM, the
// high-water mark of this process's own address space. getrusage's
// ru_maxrss is not: a process started by vfork and exec (Go's os/exec,
// posix_spawn) starts with its parent's high-water mark, so a small
// stampede launched by a large test runner or CI agent would report the
// parent's memory as its own.
func maxRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return rusageMaxRSS()
	}
	if kib, ok := statusKiB(b, "VmHWM:"); ok {
		return kib << 10
	}
	return rusageMaxRSS()
}

// statusKiB reads a "Name:   1234 kB" line of /proc/PID/status.
func statusKiB(status []byte, name string) (int64, bool) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		return n, err == nil
	}
	return 0, false
}
