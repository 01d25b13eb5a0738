//go:build !unix

package httpc

// peekOnce cannot look at the socket without Unix's MSG_PEEK: a kept
// connection counts as idle, and stray bytes are still caught once they
// reach the read buffer.
func (hc *h1conn) peekOnce(fd uintptr) bool {
	hc.peeked = peekIdle
	return true
}
