package result

import (
	"fmt"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range shared by every latency histogram: 1µs..1h, 3 significant
// digits, values in microseconds. One geometry everywhere keeps merges exact.
const (
	HistLowUS   = 1
	HistHighUS  = 3_600_000_000
	HistSigFigs = 3
)

// NewHistogram returns an empty histogram of the shared geometry.
func NewHistogram() *hdr.Histogram {
	return hdr.New(HistLowUS, HistHighUS, HistSigFigs)
}

// LatencyOf encodes h and computes the figures reports show.
func LatencyOf(h *hdr.Histogram) Latency {
	if s := h.Export(); sharedGeometry(h, s) {
		return LatencyOfCounts(s.Counts)
	}
	l := Latency{Count: h.TotalCount()}
	if l.Count > 0 {
		l.MinUS = h.Min()
		l.MaxUS = h.Max()
		l.AvgUS = h.Mean()
		ps := h.ValueAtPercentilesSlice([]float64{50, 75, 90, 95, 99, 99.9})
		l.P50US, l.P75US, l.P90US, l.P95US, l.P99US, l.P999US = ps[0], ps[1], ps[2], ps[3], ps[4], ps[5]
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err == nil {
		l.HDR = string(enc)
	}
	return l
}

// Histogram decodes the latency's HDR histogram. An empty HDR field decodes
// to an empty histogram only when Count is 0.
func (l Latency) Histogram() (*hdr.Histogram, error) {
	if l.HDR == "" {
		if l.Count != 0 {
			return nil, fmt.Errorf("latency has count %d but no hdr histogram", l.Count)
		}
		return NewHistogram(), nil
	}
	h, err := hdr.Decode([]byte(l.HDR))
	if err != nil {
		return nil, fmt.Errorf("bad hdr histogram: %w", err)
	}
	if h.TotalCount() != l.Count {
		return nil, fmt.Errorf("hdr histogram holds %d values but count says %d", h.TotalCount(), l.Count)
	}
	return h, nil
}

// Recompute rebuilds every figure from the encoded histogram, so a result
// file's numbers can be trusted to come from its histograms.
func (l Latency) Recompute() (Latency, error) {
	h, err := l.Histogram()
	if err != nil {
		return l, err
	}
	return LatencyOf(h), nil
}
