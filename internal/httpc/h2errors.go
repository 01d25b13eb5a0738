package httpc

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

// ErrRefused is a request the server refused before processing it: an
// HTTP/2 RST_STREAM with REFUSED_STREAM, or a GOAWAY whose last stream is
// below the request's. The server says it did nothing with the request, so
// it is its own class (refused), never retried behind the user's back.
var ErrRefused = errors.New("the server refused the request unprocessed")

// errH2Reset is a stream the server reset after it may have processed it.
var errH2Reset = errors.New("the server reset the HTTP/2 stream")

// h2ConnError is a connection error we detected: the server broke the
// protocol (or a bound of ours), so the connection is closed with a GOAWAY
// carrying code. It is a malformed answer, as a broken HTTP/1.1 one is.
type h2ConnError struct {
	code   http2.ErrCode
	detail string
}

func (e *h2ConnError) Error() string {
	return fmt.Sprintf("%s: HTTP/2 %s: %s; connection closed", errMalformed, e.code, e.detail)
}

func (e *h2ConnError) Unwrap() error { return errMalformed }

func h2Violation(code http2.ErrCode, format string, args ...any) error {
	return &h2ConnError{code: code, detail: fmt.Sprintf(format, args...)}
}

// The messages below name no stream number: failures are grouped by
// message, and a number per request (a GOAWAY's last stream moves on with
// every rotation too) made each refusal a message of its own, so a server
// rotating its connections filled the error table with rows that read the
// same.

// goAwayText describes the server's GOAWAY for a message.
func goAwayText(code http2.ErrCode, debug string) string {
	s := fmt.Sprintf("GOAWAY %s", code)
	if debug != "" {
		s += fmt.Sprintf(" (%q)", debug)
	}
	return s
}

func refusedByGoAway(code http2.ErrCode, debug string) error {
	return fmt.Errorf("%w: %s, and the request's stream was past the last one it took", ErrRefused, goAwayText(code, debug))
}

func refusedStream() error {
	return fmt.Errorf("%w: RST_STREAM REFUSED_STREAM", ErrRefused)
}

func streamReset(code http2.ErrCode) error {
	return fmt.Errorf("%w: RST_STREAM %s", errH2Reset, code)
}

// maxDebugKept bounds the GOAWAY debug text a connection keeps.
const maxDebugKept = 128

func clipDebug(b []byte) string {
	if len(b) > maxDebugKept {
		b = b[:maxDebugKept]
	}
	return string(b)
}
