//go:build unix && !linux

package httpc

import "syscall"

// peekOnce looks at one byte of the socket without consuming it or
// blocking (see h1conn.peekOnce).
func (c *h2conn) peekOnce(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), c.one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		c.peeked = peekIdle
	case err == nil && n > 0:
		c.peeked = peekData
	default:
		c.peeked = peekClosed
	}
	return true
}
