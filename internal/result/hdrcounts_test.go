package result

import (
	"math"
	"math/rand/v2"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// libraryLatency is LatencyOf as it was before LatencyOfCounts: every
// figure from hdrhistogram-go and its Encode.
func libraryLatency(t testing.TB, h *hdr.Histogram) Latency {
	t.Helper()
	l := Latency{Count: h.TotalCount()}
	if l.Count > 0 {
		l.MinUS = h.Min()
		l.MaxUS = h.Max()
		l.AvgUS = h.Mean()
		ps := h.ValueAtPercentilesSlice([]float64{50, 75, 90, 95, 99, 99.9})
		l.P50US, l.P75US, l.P90US, l.P95US, l.P99US, l.P999US = ps[0], ps[1], ps[2], ps[3], ps[4], ps[5]
	}
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	l.HDR = string(enc)
	return l
}

// randomHistogram fills a histogram of the shared geometry the way kind
// says: latencies over a few decades, a handful of far-apart values, huge
// counts in a few buckets (to reach the longest varints), or values at
// both ends of the range.
func randomHistogram(r *rand.Rand, kind int) *hdr.Histogram {
	h := NewHistogram()
	switch kind {
	case 0: // empty
	case 1: // log-uniform latencies over 1 µs .. 10 s
		for range 1 + r.IntN(5000) {
			h.RecordValue(int64(math.Pow(10, 7*r.Float64())))
		}
	case 2: // a few isolated values anywhere in range
		for range 1 + r.IntN(8) {
			h.RecordValues(r.Int64N(HistHighUS+1), 1+r.Int64N(3))
		}
	case 3: // huge counts: past 2⁶², ZigZag takes the library's 9-byte form
		h.RecordValues(1+r.Int64N(1_000_000), 1<<62+r.Int64N(1<<60))
		for range r.IntN(4) {
			h.RecordValues(1+r.Int64N(1_000_000), 1+r.Int64N(1<<58))
		}
	case 4: // the ends of the range, and 0, which lands in bucket 0
		h.RecordValue(0)
		h.RecordValue(HistLowUS)
		h.RecordValue(HistHighUS)
		h.RecordValues(2047, 2)
		h.RecordValues(2048, 3)
	case 5: // dense: every bucket of a decade, with runs of single zeros
		base := int64(1000 + r.IntN(100_000))
		for v := base; v < base*10; v += 1 + r.Int64N(3) {
			h.RecordValues(v, 1+r.Int64N(100))
		}
	}
	return h
}

// LatencyOf, now computed from the counts in one pass and encoded by
// encodeCounts, agrees with hdrhistogram-go byte for byte on every
// figure and on the encoded histogram, which decodes to the histogram
// encoded, so result files read as before and by older versions.
func TestLatencyOfCountsMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 1))
	for i := range 600 {
		kind := i % 6
		h := randomHistogram(r, kind)
		want := libraryLatency(t, h)
		got := LatencyOf(h)
		if got != want {
			t.Fatalf("case %d (kind %d): LatencyOf =\n%+v\nlibrary =\n%+v", i, kind, got, want)
		}
		back, err := got.Histogram()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !back.Equals(h) {
			t.Fatalf("case %d (kind %d): the encoding decodes to a different histogram", i, kind)
		}
	}
}

// A histogram of another geometry (as a result file may hold) is still
// encoded and measured by the library, not mistaken for the shared one.
func TestLatencyOfOtherGeometry(t *testing.T) {
	h := hdr.New(1, 60_000_000, 2)
	for v := int64(1); v < 60_000_000; v *= 3 {
		h.RecordValue(v)
	}
	if got, want := LatencyOf(h), libraryLatency(t, h); got != want {
		t.Fatalf("LatencyOf = %+v, library = %+v", got, want)
	}
}

// bucketOf and CountsLen are the shared geometry's: the lowest and
// highest value of every bucket land at its index, and nowhere else.
func TestCountsGeometry(t *testing.T) {
	lows, highs := NewHistogram(), NewHistogram()
	for i := range CountsLen {
		// The counts array reaches past HistHighUS to the end of its
		// last bucket, and so does what RecordValue takes.
		lo, w := bucketOf(i)
		if err := lows.RecordValue(lo); err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
		if err := highs.RecordValue(lo + w - 1); err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
	}
	for name, h := range map[string]*hdr.Histogram{"lowest": lows, "highest": highs} {
		counts := h.Export().Counts
		if len(counts) != CountsLen {
			t.Fatalf("the library's counts array is %d long, CountsLen is %d", len(counts), CountsLen)
		}
		for i, c := range counts {
			if c != 1 {
				t.Fatalf("%s values: index %d has count %d, want 1", name, i, c)
			}
		}
	}
}

// Encoding reuses its buffers: a step's latency allocates little beyond
// its encoded string (the library's Encode allocated ~800 KB).
func TestLatencyOfCountsAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	h := randomHistogram(rand.New(rand.NewPCG(1, 2)), 1)
	counts := h.Export().Counts
	LatencyOfCounts(counts)
	allocs := testing.AllocsPerRun(20, func() { LatencyOfCounts(counts) })
	if allocs > 2 {
		t.Errorf("LatencyOfCounts allocates %.0f times, want at most 2", allocs)
	}
}

// BenchmarkLatencyOf compares one step's latency made as a snapshot did
// before (the library's figures and Encode) and as it does now, for a
// step's latencies spanning two decades (1–100 ms).
func BenchmarkLatencyOf(b *testing.B) {
	h := NewHistogram()
	for i := range 400 {
		h.RecordValue(int64(1000 * math.Pow(100, float64(i)/399)))
	}
	counts := h.Export().Counts
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			libraryLatency(b, h)
		}
	})
	b.Run("counts", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			LatencyOfCounts(counts)
		}
	})
}
