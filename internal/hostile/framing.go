package hostile

import (
	"io"
	"net"
	"testing"
)

// StatusZero answers every request with status 000 (no such status
// exists) and an empty body, and keeps the connection.
func StatusZero(t testing.TB) *Server {
	const answer = "HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// ConflictingContentLength answers with two different Content-Length
// lines (2, then 50) and a 2-byte body, and keeps the connection: a
// client that believes the last line waits for 48 bytes that never come.
func ConflictingContentLength(t testing.TB) *Server {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 50\r\n\r\nok"
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, err := io.WriteString(c, answer)
		return err == nil
	})
}

// ChunkedNotLast answers with Transfer-Encoding "chunked, gzip": chunked
// is not the final coding, so the body runs until the close (RFC 9112
// section 6.3). The body looks chunked and is ChunkedNotLastBody bytes;
// the server closes after it.
func ChunkedNotLast(t testing.TB) *Server {
	const answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n" + ChunkedNotLastBody
	return perRequest(t, func(s *Server, c net.Conn) bool {
		_, _ = io.WriteString(c, answer)
		return false
	})
}

// ChunkedNotLastBody is ChunkedNotLast's body: what a client that reads
// it as chunked would take for a 2-byte body and a clean end.
const ChunkedNotLastBody = "2\r\nok\r\n0\r\n\r\n"
