//go:build linux

package readiness

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A process short of descriptors when its first connection registers
// must not lose readiness for good: before, the failure was kept by a
// sync.Once and every later connection silently kept a reading goroutine.
func TestPollerSetupFailureIsNotKept(t *testing.T) {
	pollMu.Lock()
	saved := thePoll
	thePoll = nil
	pollMu.Unlock()
	defer func() {
		pollMu.Lock()
		if thePoll != nil {
			thePoll.set.Close()
		}
		thePoll = saved
		pollMu.Unlock()
	}()

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// The lowest free descriptor number: with the limit there, no new
	// descriptor can be made.
	lowest := uint64(0)
	for ; ; lowest++ {
		if _, err := unix.FcntlInt(uintptr(lowest), unix.F_GETFD, 0); err != nil {
			break
		}
	}
	short := old
	short.Cur = lowest
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &short); err != nil {
		t.Fatal(err)
	}
	_, errShort := getPoller()
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if errShort == nil {
		t.Fatal("making the poller at the open-file limit succeeded; the test cannot show anything")
	}
	if p, err := getPoller(); err != nil || p == nil {
		t.Fatalf("after descriptors came back the poller is still not made: %v", err)
	}
}
