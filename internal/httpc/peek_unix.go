//go:build unix && !linux

package httpc

import "syscall"

// peekOnce looks at one byte of the socket without consuming it or
// blocking, to tell an idle kept connection from one the server closed or
// wrote stray bytes to.
func (hc *h1conn) peekOnce(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), hc.one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		hc.peeked = peekIdle
	case err == nil && n > 0:
		hc.peeked = peekData
	default:
		hc.peeked = peekClosed
	}
	return true
}
