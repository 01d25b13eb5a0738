package result

import "math/bits"

// CountsIndex is the index in the counts array of NewHistogram's geometry
// at which HDR records us, which must lie in [HistLowUS, HistHighUS]: the
// recorder counts into arrays of this layout without a histogram, so the
// geometry is stated once, here, beside LatencyOfCounts that reads them.
func CountsIndex(us int64) int {
	const subMask = 1<<(subHalfMag+1) - 1
	bucket := 64 - bits.LeadingZeros64(uint64(us)|subMask) - (subHalfMag + 1)
	sub := int(us >> uint(bucket))
	return (bucket+1)<<subHalfMag + sub - subHalf
}

// BucketLowest is the lowest value of the bucket at counts index i:
// recorded into a histogram of NewHistogram's geometry, it lands at i.
func BucketLowest(i int) int64 {
	lo, _ := bucketOf(i)
	return lo
}
