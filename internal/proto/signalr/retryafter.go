package signalr

import (
	"errors"
	"net/http"
	"time"

	"github.com/stampede-load/stampede/internal/proto/ws"
)

// A server over its quota (Azure SignalR Service's "Connection count
// reaches limit.", a gateway's 429 or 503) may say when to come back in a
// Retry-After header. The error of such an answer carries it, so the
// caller's retry can wait at least that long instead of hammering.

// retryAfterError is the wait a refusing answer asked for.
type retryAfterError struct{ wait time.Duration }

func (e *retryAfterError) Error() string { return "retry after " + e.wait.String() }

// RetryAfter is the wait a refused negotiate or WebSocket upgrade asked
// for in its Retry-After header; false when err carries none.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.wait, true
	}
	var we *ws.Error
	if errors.As(err, &we) {
		return we.RetryAfter()
	}
	return 0, false
}

// retryAfterOf reads h's Retry-After (ws.ParseRetryAfter); nil when
// absent or unreadable.
func retryAfterOf(h http.Header, now time.Time) error {
	d, ok := ws.ParseRetryAfter(h.Get("Retry-After"), now)
	if !ok {
		return nil
	}
	return &retryAfterError{wait: d}
}
