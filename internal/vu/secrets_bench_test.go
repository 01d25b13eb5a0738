package vu

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
)

// BenchmarkTemplatedAuthorization is the cost of noting a templated
// Authorization value as it is sent (secrets.go), against the same header
// under a name that is no credential.
func BenchmarkTemplatedAuthorization(b *testing.B) {
	for _, name := range []string{"Authorization", "X-Other"} {
		b.Run(name, func(b *testing.B) {
			base := cannedServer(b, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			u, sc, _ := recUserFor(b, "scenarios:\n  s:\n    steps:\n      - get: /\n        headers: {"+name+": \"Bearer t-{{ vu }}-0123456789abcdef\"}\nload: {stages: [{duration: 1s, users: 1}]}\n", base, metrics.ErrorOptions{})
			stop := Stop{Soft: make(chan struct{})}
			u.Iterate(sc, time.Time{}, stop)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				u.Iterate(sc, time.Time{}, stop)
			}
		})
	}
}
