package collect

import (
	"context"
	"testing"
)

// BenchmarkHostSample shows what one host sample costs on this machine;
// /proc/net/tcp dominates once tens of thousands of sockets exist.
func BenchmarkHostSample(b *testing.B) {
	c := newHostCollector()
	var e emitter
	for b.Loop() {
		e.points = e.points[:0]
		if err := c.sample(context.Background(), &e); err != nil {
			b.Fatal(err)
		}
	}
}
