// Package testserver holds loopback servers for tests and benchmarks of
// the client side: answers that cost nothing measurable, a forward proxy
// (proxy.go), a WebSocket echo (websocket.go) and a named pipe with its
// reader (pipe_unix.go).
package testserver

import (
	"net"
	"testing"
)

// Canned answers every request head (up to a blank line) with the same
// bytes and allocates nothing per request, so a benchmark in the same
// process measures the client alone and its allocs/op are the client's.
// It returns the listening address, host:port; the listener closes when
// the benchmark or test ends.
func Canned(tb testing.TB, answer string) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveCanned(c, []byte(answer))
		}
	}()
	return ln.Addr().String()
}

func serveCanned(c net.Conn, out []byte) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		// A head can end in one read only; clients under benchmark write a
		// whole request at once, so a head split across reads does not occur.
		for i := 0; i+3 < n; i++ {
			if buf[i] == '\r' && buf[i+1] == '\n' && buf[i+2] == '\r' && buf[i+3] == '\n' {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	}
}
