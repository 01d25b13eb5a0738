package ws

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A refused upgrade carries its Retry-After; one without it none.
func TestUpgradeRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{{"3", 3 * time.Second, true}, {"", 0, false}, {"later", 0, false}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if c.header != "" {
				w.Header().Set("Retry-After", c.header)
			}
			http.Error(w, "busy", http.StatusTooManyRequests)
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Dial(ctx, srv.URL, nil, &Options{}, nil)
		cancel()
		srv.Close()
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("Retry-After %q: error %v", c.header, err)
		}
		if d, ok := e.RetryAfter(); d != c.want || ok != c.ok {
			t.Errorf("Retry-After %q: %v, %v; want %v, %v", c.header, d, ok, c.want, c.ok)
		}
	}
	if d, ok := ParseRetryAfter(time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), time.Now()); !ok || d != 0 {
		t.Errorf("a past date: %v, %v", d, ok)
	}
}
