package merge

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

func tlsBlock(t *testing.T, full, resumed, failed int64, us ...int64) *result.TLS {
	t.Helper()
	h := result.NewHistogram()
	for _, v := range us {
		mustRecord(t, v, h)
	}
	return &result.TLS{Handshakes: full + resumed, Full: full, Resumed: resumed, Failed: failed, Duration: result.LatencyOf(h)}
}

// TestMergeTLS: segments' handshake counts add up and their duration
// histograms merge exactly (the merged one is what one process recording
// every handshake would hold); a segment without HTTPS adds nothing, and
// no segment with TLS gives no block.
func TestMergeTLS(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := segmentResult(t, 0, 3, t0, func(r *result.Result) { r.TLS = tlsBlock(t, 2, 1, 1, 900, 1200, 150) })
	b := segmentResult(t, 1, 3, t0, func(r *result.Result) { r.TLS = tlsBlock(t, 1, 3, 0, 2500, 140, 160, 170) })
	c := segmentResult(t, 2, 3, t0, nil)
	m, err := Options{}.Results([]*result.Result{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	want := tlsBlock(t, 3, 4, 1, 900, 1200, 150, 2500, 140, 160, 170)
	if m.TLS == nil || m.TLS.Handshakes != 7 || m.TLS.Full != 3 || m.TLS.Resumed != 4 || m.TLS.Failed != 1 {
		t.Fatalf("merged tls %+v, want 7 handshakes: 3 full, 4 resumed, 1 failed", m.TLS)
	}
	sameHist(t, "tls duration", m.TLS.Duration, want.Duration)
	if err := m.Check(); err != nil {
		t.Errorf("merged result: %v", err)
	}
	none, err := Options{}.Results([]*result.Result{segmentResult(t, 0, 2, t0, nil), segmentResult(t, 1, 2, t0, nil)})
	if err != nil || none.TLS != nil {
		t.Errorf("segments without TLS: tls %+v, err %v, want none", none.TLS, err)
	}
}
