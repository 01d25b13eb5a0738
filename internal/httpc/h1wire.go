package httpc

import (
	"errors"
	"fmt"
	"io"
	"strconv"
)

// The HTTP/1.1 exchange rules, written once and called by both engines:
// the blocking client (H1.exchange) and the event loop (Parser and Stream,
// which internal/evloop feeds the bytes it read), which only move bytes.
// Here: how a request is written (appendHead), the limits an answer is
// read under (limitsOr), how an exchange ends once its answer was parsed
// (answerEnd), and the texts of what went wrong. The parser itself is in
// h1parse.go.

// DefaultMaxKeptBody caps how much of a body is kept for captures and
// checks: each user keeps its own copy, so 50 users reading a 10 MB answer
// would otherwise hold half a gigabyte. The rest is still read (so the
// connection stays usable) and counted, never stored.
const DefaultMaxKeptBody = 1 << 20

// DefaultMaxHeaderBytes bounds an answer's header block (status line,
// header lines and interim 1xx answers together): a server that sends
// header lines forever must fail its request, not exhaust our memory.
const DefaultMaxHeaderBytes = 64 << 10

// limitsOr is the run's limits on an answer, each 0 or less meaning its
// default: the header block's size and the body bytes kept.
func limitsOr(header, kept int) (int, int) {
	if header <= 0 {
		header = DefaultMaxHeaderBytes
	}
	if kept <= 0 {
		kept = DefaultMaxKeptBody
	}
	return header, kept
}

// answerEnd is how an exchange ends once the parser is done: err is the
// parser's, reused says the connection carried an answer before, and tail
// is how many bytes were found after the answer. A kept connection the
// server closed before a byte of the answer is ErrServerClosed; bytes
// after a complete answer mean its framing was wrong (a Content-Length
// shorter than the body, a body after a 204), so this answer is the one
// that fails and its connection goes, and the stray bytes are never read
// as the next request's answer. Any failure closes the connection.
func answerEnd(closeAfter bool, err error, reused bool, tail int) (bool, error) {
	switch {
	case err != nil:
		if reused && errors.Is(err, io.EOF) {
			err = ErrServerClosed
		}
		return true, err
	case tail > 0:
		return true, errTrailing
	}
	return closeAfter, nil
}

// ErrServerClosed means the server closed a kept-alive connection before
// sending any byte of the answer.
var ErrServerClosed = errors.New("server closed the connection before answering")

var errMalformed = errors.New("malformed HTTP response")

var (
	errTrailing   = fmt.Errorf("%w: bytes follow the end of the answer (a Content-Length shorter than the body, or a body where none belongs); connection closed", errMalformed)
	errUnasked101 = fmt.Errorf("%w: 101 Switching Protocols to a request that asked for no upgrade; connection closed", errMalformed)
)

// headerTooBig is the error of an answer whose header block passed the cap.
func headerTooBig(max int) error {
	return fmt.Errorf("%w: response header block longer than %d bytes (http.max_header_bytes); connection closed", errMalformed, max)
}

// checkStatus refuses a status code below 100 (000 to 099): no such
// answer exists, and counting it as a success hid a broken server.
func checkStatus(status int) error {
	if why := statusProblem(status); why != "" {
		return fmt.Errorf("%w: %s", errMalformed, why)
	}
	return nil
}

// statusProblem is what is wrong with a status code ("" when nothing):
// one rule, in one wording, for HTTP/1.1 and HTTP/2 (h2headers.go).
func statusProblem(status int) string {
	if status < 100 {
		return fmt.Sprintf("status %03d is not an HTTP status", status)
	}
	return ""
}

// AppendRequest appends req as RoundTrip writes it: head and body.
func AppendRequest(b []byte, req *Request) []byte {
	return append(appendHead(b, req), req.Body...)
}

// separateBodyOver is the request body size above which the body is
// written on its own.
const separateBodyOver = 16 << 10

// appendHead appends the request line and headers, up to the blank line.
func appendHead(b []byte, req *Request) []byte { return appendHeadVia(b, req, nil) }

// appendHeadVia is appendHead for a request to a proxy when px is set:
// the target in absolute form, and the proxy's credentials.
func appendHeadVia(b []byte, req *Request, px *proxyRoute) []byte {
	b = append(b, req.Method...)
	b = append(b, ' ')
	if px != nil {
		b = append(b, "http://"...)
		b = append(b, req.Endpoint.Host...)
	}
	if len(req.PathQuery) == 0 {
		b = append(b, '/')
	}
	b = append(b, req.PathQuery...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, req.Endpoint.Host...)
	b = append(b, "\r\n"...)
	if px != nil && px.auth != "" {
		b = append(b, "Proxy-Authorization: "...)
		b = append(b, px.auth...)
		b = append(b, "\r\n"...)
	}
	for _, f := range req.Header {
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	if len(req.Body) > 0 || bodyMethod(req.Method) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(req.Body)), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}

func bodyMethod(m string) bool { return m == "POST" || m == "PUT" || m == "PATCH" }
