//go:build !unix

package httpc

// peekOnce cannot look without reading here: the connection counts as idle
// and a close is found by the next request's read.
func (c *h2conn) peekOnce(fd uintptr) bool {
	c.peeked = peekIdle
	return true
}
