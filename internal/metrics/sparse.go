package metrics

import (
	"math"
	"math/bits"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry of result.NewHistogram (1 µs – 1 h, 3 significant digits),
// as HDR derives it: 2,048 sub-buckets (2·10³ rounded up to a power of
// two), unit 1, and 22 buckets, each bucket after the first holding only
// its upper half, so a flat array of (22+1)·1,024 counts. TestSparseGeometry
// checks every index against the library.
const (
	subHalfMag = 10
	subMask    = 1<<(subHalfMag+1) - 1
	countsLen  = 23 << subHalfMag

	// Counts are kept in chunks of chunkLen, made at their first value: a
	// step's latencies fill a few magnitudes of the 22, and within those
	// the sub-buckets they reach.
	chunkShift = 8
	chunkLen   = 1 << chunkShift
	numChunks  = countsLen / chunkLen
)

// sparseHist counts latencies in exactly the buckets of an HDR histogram of
// result.NewHistogram's geometry, but holds only the chunks of buckets that
// have seen a value: a dense histogram is 184 KB, and every sent step had
// two in every shard. A count is 32 bits; the rare bucket that passes 2³²−1
// in one shard moves its count to over, so totals stay exact. Recording
// allocates only when a chunk is first reached.
type sparseHist struct {
	chunks [numChunks]*[chunkLen]uint32
	over   map[int32]int64
}

// countsIndex is hdr's countsIndexFor for the shared geometry; us is
// already clamped to [HistLowUS, HistHighUS].
func countsIndex(us int64) int32 {
	bucket := int32(64-bits.LeadingZeros64(uint64(us)|subMask)) - (subHalfMag + 1)
	sub := int32(us >> uint(bucket))
	return (bucket+1)<<subHalfMag + sub - 1<<subHalfMag
}

// valueAt is the lowest value of the bucket at counts index i: recorded
// into an HDR histogram of the same geometry, it lands at index i.
func valueAt(i int32) int64 {
	bucket := i>>subHalfMag - 1
	sub := i&(1<<subHalfMag-1) + 1<<subHalfMag
	if bucket < 0 {
		sub -= 1 << subHalfMag
		bucket = 0
	}
	return int64(sub) << uint(bucket)
}

func (h *sparseHist) record(us int64) {
	i := countsIndex(us)
	c := h.chunks[i>>chunkShift]
	if c == nil {
		c = new([chunkLen]uint32)
		h.chunks[i>>chunkShift] = c
	}
	p := &c[i&(chunkLen-1)]
	if *p == math.MaxUint32 {
		h.spill(i, int64(*p))
		*p = 0
	}
	*p++
}

func (h *sparseHist) spill(i int32, n int64) {
	if h.over == nil {
		h.over = map[int32]int64{}
	}
	h.over[i] += n
}

// addTo records h's counts into each of the given histograms, which must
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
				d.RecordValues(v, int64(n))
			}
		}
	}
	for i, n := range h.over {
		v := valueAt(i)
		for _, d := range dst {
			d.RecordValues(v, n)
		}
	}
}

// sparseOf returns *h, making it at its first use.
func sparseOf(h **sparseHist) *sparseHist {
	if *h == nil {
		*h = &sparseHist{}
	}
	return *h
}
