//go:build linux

package httpc

import (
	"syscall"
	"unsafe"
)

// recvOnce reads what the socket holds into c.rbuf without blocking; see
// peekOnce for why it is a raw system call.
func (c *recConn) recvOnce(fd uintptr) bool {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)), syscall.MSG_DONTWAIT, 0, 0)
	c.rn, c.rerr = int(n), e
	if e != 0 {
		c.rn = 0
	}
	return true
}
