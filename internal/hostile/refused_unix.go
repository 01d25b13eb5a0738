//go:build unix

package hostile

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Refused returns a loopback host:port that refuses every connection for
// the whole test. A port taken from a listener and then closed is free for
// anyone: on a busy machine another test's server soon listens there, and
// "refused" turns into whatever that server answers. Here the port stays
// bound to a socket that never listens, so the kernel answers each
// connection with a reset and gives the port to no one else.
func Refused(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		tb.Fatalf("bound to %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in.Port))
}
