package httpc

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLoopTLSLargeBodyBounded: a request far larger than the socket takes
// at once is sent through the event loop's TLS connection with at most
// one piece's records waiting in it, not the whole encrypted body, and
// the server receives every byte in order. Before the pieces, Write
// encrypted the whole request at once and kept what the socket refused
// (megabytes here).
func TestLoopTLSLargeBodyBounded(t *testing.T) {
	const bodyLen = 4 << 20
	req := []byte("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(bodyLen) + "\r\n\r\n")
	for i := range bodyLen {
		req = append(req, byte(i%251))
	}
	release := make(chan struct{})
	got := make(chan [sha256.Size]byte, 1)
	srv := startTLSServer(t, &tls.Config{NextProtos: []string{"http/1.1"}}, func(tc *tls.Conn, br *bufio.Reader) {
		<-release
		h := sha256.New()
		n, _ := io.Copy(h, io.LimitReader(br, int64(len(req))))
		if n != int64(len(req)) {
			t.Errorf("server read %d bytes, want %d", n, len(req))
		}
		got <- [sha256.Size]byte(h.Sum(nil))
	})
	sh := NewShared(insecure())
	defer sh.Close()
	lc, err := sh.NewLoopTLS().Dial(httpsEP(srv.addr), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	// A small send buffer, so the socket refuses most of the request
	// while the server does not read.
	if err := unix.SetsockoptInt(lc.FD(), unix.SOL_SOCKET, unix.SO_SNDBUF, 64<<10); err != nil {
		t.Fatal(err)
	}
	if err := lc.Write(req); err != nil {
		t.Fatal(err)
	}
	if !lc.Pending() {
		t.Fatal("the socket took the whole request at once: nothing was left to bound")
	}
	blocked := lc.sock.peak
	close(release)
	for lc.Pending() {
		waitWritable(t, lc.FD())
		if _, err := lc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case sum := <-got:
		if sum != sha256.Sum256(req) {
			t.Error("the server received other bytes than the request")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not receive the whole request")
	}
	if blocked > keptOutCap || lc.sock.peak > keptOutCap {
		t.Errorf("waiting for the socket: %d bytes buffered (%d over the whole request), want at most %d", blocked, lc.sock.peak, keptOutCap)
	}
	if c := cap(lc.sock.out); c > keptOutCap {
		t.Errorf("the connection keeps a %d-byte write buffer, want at most %d", c, keptOutCap)
	}
}

// waitWritable waits, boundedly, for the socket to take more.
func waitWritable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(fds, 10_000)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			t.Fatal(err)
		case n == 0:
			t.Fatal("the socket stayed unwritable for 10 s")
		}
		return
	}
}
