//go:build unix && !linux

package httpc

import "syscall"

// recvOnce reads what the socket holds into c.rbuf without blocking.
func (c *recConn) recvOnce(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), c.rbuf, syscall.MSG_DONTWAIT)
	c.rn, c.rerr = max(n, 0), 0
	if e, ok := err.(syscall.Errno); ok {
		c.rerr = e
	}
	return true
}
