//go:build unix

package session

import (
	"math"
	"syscall"
)

// openFilesLimit is the open files a run may have: the hard limit, since
// Go's runtime raises the soft limit to it as the process starts
// (usableLimit says where that differs).
func openFilesLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return math.MaxUint64
	}
	return usableLimit(uint64(l.Cur), uint64(l.Max))
}
