package main

import (
	"math"
	"syscall"
)

// openFilesLimit is the open files a run may have. macOS reports a hard
// limit of RLIM_INFINITY while the kernel allows a process only
// kern.maxfilesperproc (about 10,000 to 24,000); Go's runtime raises the
// soft limit to that at start, so there the soft limit is the real one.
func openFilesLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return math.MaxUint64
	}
	return darwinOpenFiles(uint64(l.Cur), uint64(l.Max))
}
