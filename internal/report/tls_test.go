package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// TestTextTLSLine: a run with TLS handshakes shows them on one line,
// figures recomputed from the histogram; a run without shows none.
func TestTextTLSLine(t *testing.T) {
	r := healthyClosed(t)
	var plain bytes.Buffer
	if err := Text(&plain, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "TLS handshakes") {
		t.Errorf("a run without TLS shows a TLS line:\n%s", plain.String())
	}
	h := result.NewHistogram()
	for _, us := range []int64{1000, 1000, 1000, 250, 250, 250, 250, 250, 250, 4000} {
		h.RecordValue(us)
	}
	l := result.LatencyOf(h)
	r.TLS = &result.TLS{Handshakes: 10, Full: 4, Resumed: 6, Failed: 2, Duration: l}
	r.TLS.Duration.P50US = 1 // the line must not trust stored figures
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	want := "TLS handshakes: 10 (4 full, 6 resumed, 2 failed), p50 " + Duration(250) + ", p99 " + Duration(l.P99US) + ", max " + Duration(l.MaxUS)
	if !strings.Contains(b.String(), want) {
		t.Errorf("text report lacks %q:\n%s", want, b.String())
	}
}
