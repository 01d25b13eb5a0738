// Package hostile has servers that misbehave on purpose, for tests that
// show stampede stays bounded in memory and time against them and counts
// each failure in its documented class. Every server listens on loopback
// only. HTTP/1.1 servers are in this file; servers for other protocols
// belong in files of their own, built on Serve.
//
// Each constructor takes the testing.TB that owns the server: the server is
// closed, and its goroutines have ended, when that test ends.
package hostile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is one hostile server on 127.0.0.1.
type Server struct {
	// Addr is host:port; URL is http://Addr.
	Addr string
	URL  string

	ln       net.Listener
	requests atomic.Int64
	conns    atomic.Int64
	quit     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	open     map[net.Conn]struct{}
	closeOne sync.Once
}

// Requests is how many request heads the server has read.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Conns is how many connections the server has accepted.
func (s *Server) Conns() int64 { return s.conns.Load() }

// Close stops the server, cuts every connection and waits for its
// goroutines.
func (s *Server) Close() {
	s.closeOne.Do(func() {
		close(s.quit)
		s.ln.Close()
		s.mu.Lock()
		for c := range s.open {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}

// Quit is closed when the server is closing: a handler that writes forever
// stops on it.
func (s *Server) Quit() <-chan struct{} { return s.quit }

// Serve runs handle for every connection to a new loopback server. ln, when
// not nil, is the listener to use (one with socket options of its own).
func Serve(t testing.TB, ln net.Listener, handle func(s *Server, c net.Conn)) *Server {
	t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln, quit: make(chan struct{}), open: map[net.Conn]struct{}{}}
	s.URL = "http://" + s.Addr
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			select {
			case <-s.quit:
				s.mu.Unlock()
				c.Close()
				return
			default:
			}
			s.open[c] = struct{}{}
			s.conns.Add(1)
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer func() {
					s.mu.Lock()
					delete(s.open, c)
					s.mu.Unlock()
					c.Close()
				}()
				handle(s, c)
			}()
		}
	}()
	t.Cleanup(s.Close)
	return s
}

// ReadRequest reads one request head and its Content-Length body, and
// counts it. It returns false when the client is gone.
func (s *Server) ReadRequest(br *bufio.Reader) bool {
	length := 0
	first := true
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return false
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if first {
				continue
			}
			break
		}
		first = false
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	if _, err := io.CopyN(io.Discard, br, int64(length)); err != nil {
		return false
	}
	s.requests.Add(1)
	return true
}

// perRequest serves answer to each request on a connection until the client
// goes or answer returns false.
func perRequest(t testing.TB, answer func(s *Server, c net.Conn) bool) *Server {
	return Serve(t, nil, func(s *Server, c net.Conn) {
		br := bufio.NewReader(c)
		for s.ReadRequest(br) {
			if !answer(s, c) {
				return
			}
		}
	})
}

// writeForever writes chunk until the client stops reading or the server
// closes. A write that blocks is the client's bounded buffer doing its job.
func writeForever(s *Server, c net.Conn, chunk []byte) {
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.Write(chunk); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
	}
}

// EndlessHeaders answers with a status line and then header lines forever.
func EndlessHeaders(t testing.TB) *Server {
	var block bytes.Buffer
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&block, "X-Filler-%d: %s\r\n", i, strings.Repeat("h", 50))
	}
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		writeForever(s, c, block.Bytes())
		return false
	})
}

// HugeHeaderLine answers with one header line that never ends.
func HugeHeaderLine(t testing.TB) *Server {
	chunk := bytes.Repeat([]byte("a"), 16<<10)
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Huge: ")
		writeForever(s, c, chunk)
		return false
	})
}

// LongHeaderLine answers 200 with one header line of n bytes, then a
// proper end: a real server's big cookie, which a client must accept while
// it fits its header cap.
func LongHeaderLine(t testing.TB, n int) *Server {
	answer := "HTTP/1.1 200 OK\r\nSet-Cookie: big=" + strings.Repeat("c", n) + "\r\nContent-Length: 2\r\n\r\nok"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// ShortContentLength answers "ok" with Content-Length: 2 followed by bytes
// the length does not cover, in one write, and keeps the connection.
func ShortContentLength(t testing.TB) *Server {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok and then some more bytes"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// LongContentLength announces 1000 bytes, sends 5 and closes.
func LongContentLength(t testing.TB) *Server {
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nshort")
		return false
	})
}

// Upgrade101 answers every request, a plain GET included, with 101
// Switching Protocols and keeps the connection open.
func Upgrade101(t testing.TB) *Server {
	const answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// Garbage answers with bytes that are not HTTP, and keeps the connection.
func Garbage(t testing.TB) *Server {
	const answer = "SSH-2.0-OpenSSH_9.6\r\n\x00\x01\x02\xff garbage\r\n\r\n"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// EndlessChunked answers 200 with a chunked body that never ends.
func EndlessChunked(t testing.TB) *Server {
	var chunk bytes.Buffer
	body := strings.Repeat("z", 16<<10)
	fmt.Fprintf(&chunk, "%x\r\n%s\r\n", len(body), body)
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		writeForever(s, c, chunk.Bytes())
		return false
	})
}

var (
	bombOnce sync.Once
	bomb     []byte
)

// GzipBombSize is what the gzip bomb's body inflates to.
const GzipBombSize = 256 << 20

// GzipBomb answers 200 with Content-Encoding: gzip and a body of a few
// hundred kilobytes that inflates to GzipBombSize bytes of zeros.
func GzipBomb(t testing.TB) *Server {
	bombOnce.Do(func() {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zeros := make([]byte, 1<<20)
		for i := 0; i < GzipBombSize>>20; i++ {
			_, _ = zw.Write(zeros)
		}
		zw.Close()
		bomb = b.Bytes()
	})
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(bomb))
	return perRequest(t, func(s *Server, c net.Conn) bool {
		if _, err := io.WriteString(c, head); err != nil {
			return false
		}
		_, err := c.Write(bomb)
		return err == nil
	})
}

// Slowloris dribbles a valid answer one byte every interval, so no single
// read ever waits long but the answer takes far longer than any timeout.
func Slowloris(t testing.TB, interval time.Duration) *Server {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n" + "0123456789012345678901234567890123456789012345678901234567890123"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; i < len(answer); i++ {
			select {
			case <-s.quit:
				return false
			case <-tick.C:
			}
			if _, err := c.Write([]byte{answer[i]}); err != nil {
				return false
			}
		}
		return true
	})
}

// NeverReads accepts connections and never reads from them or answers, with
// a receive buffer as small as the kernel allows, so a request body of a
// megabyte or two blocks the client's write.
func NeverReads(t testing.TB) *Server {
	lc := net.ListenConfig{Control: func(network, address string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			// Accepted sockets inherit the listener's buffer size.
			serr = smallReceiveBuffer(fd)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, ln, func(s *Server, c net.Conn) {
		<-s.quit
	})
}

// ResetMidBody announces a 1 MiB body, sends 64 KiB of it and resets the
// connection.
func ResetMidBody(t testing.TB) *Server {
	part := bytes.Repeat([]byte("r"), 64<<10)
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n")
		_, _ = c.Write(part)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		return false
	})
}

// BigBody answers 200 with a body of n bytes that has marker at its end,
// with Content-Length: what a user capturing from a big document meets.
func BigBody(t testing.TB, n int, marker string) *Server {
	body := append(bytes.Repeat([]byte("b"), n-len(marker)), marker...)
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
	return perRequest(t, func(s *Server, c net.Conn) bool {
		if _, err := io.WriteString(c, head); err != nil {
			return false
		}
		_, err := c.Write(body)
		return err == nil
	})
}
