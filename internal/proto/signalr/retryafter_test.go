package signalr

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A negotiate refused over quota carries its Retry-After, in seconds or as
// a date, to the caller's error; one without it carries none.
func TestNegotiateRetryAfter(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		header string
		lo, hi time.Duration
		ok     bool
	}{
		{"7", 7 * time.Second, 7 * time.Second, true},
		{date, 80 * time.Second, 90 * time.Second, true},
		{"", 0, 0, false},
		{"soon", 0, 0, false},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if c.header != "" {
				w.Header().Set("Retry-After", c.header)
			}
			http.Error(w, "Connection count reaches limit.", http.StatusTooManyRequests)
		}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Connect(ctx, srv.URL+"/hub", nil, &Options{})
		cancel()
		srv.Close()
		if err == nil {
			t.Fatalf("Retry-After %q: connected to a server that refuses", c.header)
		}
		d, ok := RetryAfter(err)
		if ok != c.ok || d < c.lo || d > c.hi {
			t.Errorf("Retry-After %q: RetryAfter = %v, %v; want %v..%v, %v (err %v)", c.header, d, ok, c.lo, c.hi, c.ok, err)
		}
	}
}

func TestRetryAfterOfBounds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", now.Add(-time.Hour).Format(http.TimeFormat))
	if d, ok := RetryAfter(retryAfterOf(h, now)); !ok || d != 0 {
		t.Errorf("a past date: %v, %v; want 0, true", d, ok)
	}
	h.Set("Retry-After", "-3")
	if _, ok := RetryAfter(retryAfterOf(h, now)); ok {
		t.Error("a negative number was taken as a wait")
	}
	h.Set("Retry-After", "99999999")
	if d, _ := RetryAfter(retryAfterOf(h, now)); d != 24*time.Hour {
		t.Errorf("a huge wait: %v, want capped at a day", d)
	}
}
