//go:build !unix

package httpc

import "syscall"

// recvOnce cannot read without blocking here: the look finds nothing, and
// stray bytes are still caught when they reach the next answer's read.
func (c *recConn) recvOnce(fd uintptr) bool {
	c.rn, c.rerr = 0, syscall.EAGAIN
	return true
}
