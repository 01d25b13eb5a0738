package metrics

import (
	"math"

	"github.com/stampede-load/stampede/internal/result"
)

const (
	countsLen = result.CountsLen

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
// moves its count to over, so totals stay exact. Recording allocates only
// when a chunk is first reached.
type sparseHist struct {
	chunks [numChunks]*[chunkLen]uint32
	over   map[int32]int64
}

// countsIndex is result.CountsIndex; us is already clamped to
// [HistLowUS, HistHighUS].
func countsIndex(us int64) int32 { return int32(result.CountsIndex(us)) }

// valueAt is the lowest value of the bucket at counts index i: recorded
// into an HDR histogram of the same geometry, it lands at index i.
func valueAt(i int32) int64 { return result.BucketLowest(int(i)) }

func (h *sparseHist) record(us int64) { h.add(countsIndex(us), 1) }

// add counts n values at counts index i.
func (h *sparseHist) add(i int32, n int64) {
	c := h.chunks[i>>chunkShift]
	if c == nil {
		c = new([chunkLen]uint32)
		h.chunks[i>>chunkShift] = c
	}
	p := &c[i&(chunkLen-1)]
	if sum := int64(*p) + n; sum > math.MaxUint32 {
		h.spill(i, sum)
		*p = 0
		return
	}
	*p += uint32(n)
}

func (h *sparseHist) spill(i int32, n int64) {
	if h.over == nil {
		h.over = map[int32]int64{}
	}
	h.over[i] += n
}

// sparseOf returns *h, making it at its first use.
func sparseOf(h **sparseHist) *sparseHist {
	if *h == nil {
		*h = &sparseHist{}
	}
	return *h
}
