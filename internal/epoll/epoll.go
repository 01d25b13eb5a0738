// Package epoll is the process's one wrapper of epoll, eventfd and timerfd:
// an epoll set with a wake-up eventfd already in it, and a timer with
// nanosecond resolution. Every call returns its error (an *os.SyscallError)
// rather than panicking, and Wait hides EINTR, so a library goroutine
// waiting here can hand a failure to its callers instead of taking the
// process down.
//
// It is Linux only; elsewhere New and NewTimer return ErrUnsupported.
package epoll

import "errors"

// WakeKey is the Fd of the events the set's own eventfd reports: callers
// key their descriptors with values ≥ 0 (or other negative values of
// their own).
const WakeKey int32 = -1

// ErrUnsupported is what New and NewTimer return where there is no epoll.
var ErrUnsupported = errors.New("epoll: not supported on this system")
