package metrics

import (
	"math"
	"math/rand"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

// Every counts index of the shared geometry maps back to itself through
// valueAt, and HDR puts that value at the same index: the sparse counts
// and the library's agree bucket for bucket.
func TestSparseGeometry(t *testing.T) {
	h := result.NewHistogram()
	for i := int32(0); i < countsLen; i++ {
		v := valueAt(i)
		if got := countsIndex(v); got != i {
			t.Fatalf("countsIndex(valueAt(%d) = %d) = %d", i, v, got)
		}
		if v < result.HistLowUS || v > result.HistHighUS {
			// Never reached: recorded values are clamped to the range.
			continue
		}
		if err := h.RecordValues(v, int64(i)+1); err != nil {
			t.Fatalf("index %d: %v", i, err)
		}
	}
	counts := h.Export().Counts
	if len(counts) != countsLen {
		t.Fatalf("HDR has %d counts, the sparse geometry %d", len(counts), countsLen)
	}
	for i, c := range counts {
		v := valueAt(int32(i))
		if v < result.HistLowUS || v > result.HistHighUS {
			continue
		}
		if c != int64(i)+1 {
			t.Fatalf("index %d (value %d) holds %d in HDR, want %d", i, v, c, i+1)
		}
	}
	if top := countsIndex(result.HistHighUS); top >= countsLen {
		t.Fatalf("the highest value's index %d is past the counts (%d)", top, countsLen)
	}
}

// A histogram built from sparse counts is the histogram the values make
// recorded directly: the same counts in every bucket and total, so the
// same percentiles, min, max, mean and encoding.
func TestSparseMatchesHDR(t *testing.T) {
	rng := rand.New(rand.NewSource(18))
	for round := 0; round < 50; round++ {
		n := 1 + rng.Intn(5000)
		var sp sparseHist
		want := result.NewHistogram()
		for _, v := range sampleValues(rng, n) {
			sp.record(v)
			if err := want.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		got, tot := result.NewHistogram(), result.NewHistogram()
		sp.addTo(got, tot)
		if !got.Equals(want) || !tot.Equals(want) {
			t.Fatalf("round %d: sparse histogram of %d values differs from HDR's", round, n)
		}
		if g, w := result.LatencyOf(got), result.LatencyOf(want); g != w {
			t.Fatalf("round %d: latency %+v, want %+v", round, g, w)
		}
	}
}

// A bucket past 2³²−1 in one shard keeps its exact count.
func TestSparseCountPastUint32(t *testing.T) {
	var sp sparseHist
	sp.record(1500)
	i := countsIndex(1500)
	sp.chunks[i>>chunkShift][i&(chunkLen-1)] = math.MaxUint32 - 1
	for k := 0; k < 3; k++ {
		sp.record(1500)
	}
	sp.record(7)
	h := result.NewHistogram()
	sp.addTo(h)
	want := int64(math.MaxUint32) + 2
	if got := h.Export().Counts[i]; got != want {
		t.Errorf("bucket holds %d, want %d", got, want)
	}
	if h.TotalCount() != want+1 {
		t.Errorf("total %d, want %d", h.TotalCount(), want+1)
	}
}

// addTo records h's counts (a reference for addCounts) into each of the given histograms, which must
// have result.NewHistogram's geometry.
func (h *sparseHist) addTo(dst ...*hdr.Histogram) {
	if h == nil {
		return
	}
	for ci, c := range h.chunks {
		if c == nil {
			continue
		}
		base := int32(ci) << chunkShift
		for j, n := range c {
			if n == 0 {
				continue
			}
			v := valueAt(base + int32(j))
			for _, d := range dst {
				_ = d.RecordValues(v, int64(n)) // a bucket's own value: in range
			}
		}
	}
	for i, n := range h.over {
		v := valueAt(i)
		for _, d := range dst {
			_ = d.RecordValues(v, n) // a bucket's own value: in range
		}
	}
}
