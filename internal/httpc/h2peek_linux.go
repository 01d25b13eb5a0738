//go:build linux

package httpc

import (
	"syscall"
	"unsafe"
)

// peekOnce looks at one byte of the socket without consuming it or
// blocking (see h1conn.peekOnce).
func (c *h2conn) peekOnce(fd uintptr) bool {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.one[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	c.peeked = peekResult(int(n), e)
	return true
}

func peekResult(n int, e syscall.Errno) peekState {
	switch {
	case e == syscall.EAGAIN || e == syscall.EWOULDBLOCK:
		return peekIdle
	case e == 0 && n > 0:
		return peekData
	}
	return peekClosed
}
