package report

import (
	"bytes"
	"fmt"

	"github.com/stampede-load/stampede/internal/result"
)

// tlsLine is the handshakes' one line: how many, how many resumed a
// session, how many failed, and their durations, recomputed from the
// histogram like every other figure.
func tlsLine(b *bytes.Buffer, t *result.TLS) {
	if t == nil {
		return
	}
	fmt.Fprintf(b, "TLS handshakes: %d (%d full, %d resumed", t.Handshakes, t.Full, t.Resumed)
	if t.Failed > 0 {
		fmt.Fprintf(b, ", %d failed", t.Failed)
	}
	b.WriteString(")")
	if l, err := t.Duration.Recompute(); err == nil && l.Count > 0 {
		fmt.Fprintf(b, ", p50 %s, p99 %s, max %s", Duration(l.P50US), Duration(l.P99US), Duration(l.MaxUS))
	}
	b.WriteString("\n\n")
}
