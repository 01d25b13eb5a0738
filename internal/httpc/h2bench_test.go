package httpc

import (
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
)

// BenchmarkH2 is one user's kept-alive h2c round trips against a minimal
// in-process server (whose own work is in the figures too).
func BenchmarkH2(b *testing.B) {
	srv := hostile.H2OK(b, false)
	ep := h2EP(srv)
	c := testH2(b, ep, Options{})
	var resp Response
	req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second,
		Header: []Field{{Name: []byte("User-Agent"), Value: []byte("stampede")}}}
	if err := c.RoundTrip(req, &resp); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.RoundTrip(req, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkH2Shared is 64 users' streams over one shared h2c connection.
func BenchmarkH2Shared(b *testing.B) {
	srv := hostile.H2OK(b, false)
	ep := h2EP(srv)
	const users = 64
	sh := NewShared(Options{H2Shared: true, Protocol: ProtoH2C})
	b.Cleanup(sh.Close)
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for u := 0; u < users; u++ {
		c := sh.NewTransport()
		b.Cleanup(c.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp Response
			req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second}
			for i := u; i < b.N; i += users {
				if err := c.RoundTrip(req, &resp); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
