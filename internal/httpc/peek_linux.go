//go:build linux

package httpc

import (
	"syscall"
	"unsafe"
)

// peekOnce looks at one byte of the socket without consuming it or
// blocking, to tell an idle kept connection from one the server closed or
// wrote stray bytes to. MSG_DONTWAIT makes the call return at once, so it
// is not announced to the scheduler as a system call that might block
// (see writeOnce).
func (hc *h1conn) peekOnce(fd uintptr) bool {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&hc.one[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case e == syscall.EAGAIN || e == syscall.EWOULDBLOCK:
		hc.peeked = peekIdle
	case e == 0 && n > 0:
		hc.peeked = peekData
	default:
		hc.peeked = peekClosed
	}
	return true
}
