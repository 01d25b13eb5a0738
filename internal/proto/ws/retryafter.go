package ws

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads a Retry-After header's value, delay-seconds or an
// HTTP-date (RFC 9110 10.2.3) counted from now; false when it is empty or
// unreadable. A date in the past asks for no wait, and a wait is at most
// a day: a larger one is more likely a mistake than a wait any client
// would keep to. A refused upgrade's Error carries it (Error.RetryAfter),
// as a refused SignalR negotiate's does.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, 86400)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(at.Sub(now), 0), 24*time.Hour), true
}

// RetryAfter is the wait a refused upgrade's Retry-After header asked
// for; false when it carried none.
func (e *Error) RetryAfter() (time.Duration, bool) { return e.retryAfter, e.hasRetryAfter }
