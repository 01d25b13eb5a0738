package httpc

import (
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
