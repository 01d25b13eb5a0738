package signalr

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A server over its quota (Azure SignalR Service's "Connection count
// reaches limit.", a gateway's 429 or 503) may say when to come back in a
// Retry-After header. The error of such an answer carries it, so the
// caller's retry can wait at least that long instead of hammering.

// retryAfterError is the wait a refusing answer asked for.
type retryAfterError struct{ wait time.Duration }

func (e *retryAfterError) Error() string { return "retry after " + e.wait.String() }

// RetryAfter is the wait a refused negotiate or connect asked for in its
// Retry-After header; false when err carries none.
func RetryAfter(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.wait, true
	}
	return 0, false
}

// retryAfterOf reads h's Retry-After, delay-seconds or an HTTP-date
// (RFC 9110 10.2.3) counted from now; nil when absent or unreadable. A
// date in the past asks for no wait.
func retryAfterOf(h http.Header, now time.Time) error {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return nil
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return nil
		}
		// A day at most: a larger number is more likely a mistake than a
		// wait any client would keep to.
		return &retryAfterError{wait: time.Duration(min(secs, 86400)) * time.Second}
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return nil
	}
	return &retryAfterError{wait: max(at.Sub(now), 0)}
}
