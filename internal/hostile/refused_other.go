//go:build !unix

package hostile

import (
	"net"
	"testing"
)

// Refused returns a loopback host:port nothing listens on. Without a
// portable way to keep a port bound but not listening, the port is only
// free, not reserved: another server may come to listen on it.
func Refused(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}
