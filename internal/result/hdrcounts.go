package result

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The counts array of NewHistogram's geometry, as HDR lays it out: 2,048
// sub-buckets (2·10³ rounded up to a power of two), unit 1, 22 buckets,
// each after the first holding only its upper half, so (22+1)·1,024 counts.
// TestCountsGeometry checks every index against the library.
const (
	subHalfMag = 10
	subHalf    = 1 << subHalfMag

	// CountsLen is the length of the counts array LatencyOfCounts takes.
	CountsLen = 23 << subHalfMag
)

// The V2 compressed format, as hdrhistogram-go (and Java's HdrHistogram)
// write it: an outer cookie and the zlib stream's length, then the zlib
// stream of a 40-byte header and the counts as ZigZag LEB128 varints, a
// run of zeros written as its negated length.
const (
	v2Cookie           = hdr.V2EncodingCookieBase | 0x10
	v2CompressedCookie = hdr.V2CompressedEncodingCookieBase | 0x10
	v2HeaderLen        = 40
)

// latencyPercentiles are the percentiles Latency holds, in field order.
var latencyPercentiles = [...]float64{50, 75, 90, 95, 99, 99.9}

// bucketOf is the lowest value of the bucket at counts index i and the
// bucket's width: its values are lowest..lowest+width-1.
func bucketOf(i int) (lowest, width int64) {
	bucket := i>>subHalfMag - 1
	sub := i&(subHalf-1) + subHalf
	if bucket < 0 {
		sub -= subHalf
		bucket = 0
	}
	return int64(sub) << uint(bucket), 1 << uint(bucket)
}

// percentileRank is hdrhistogram-go's: the count at which a percentile's
// value is reached, in [1, total].
func percentileRank(percentile float64, total int64) int64 {
	rank := (percentile/100)*float64(total) + 0.5
	if !(rank >= 1) {
		return 1
	}
	if rank >= float64(total) {
		return total
	}
	return int64(rank)
}

// LatencyOfCounts is LatencyOf of the histogram of NewHistogram's geometry
// whose counts array is counts (CountsLen long, no count negative), made
// without a histogram: a snapshot sums each step's counts across shards
// into one array it reuses. Every figure and the encoding are the
// library's, byte for byte (TestLatencyOfCountsMatchesLibrary), but come
// from one pass over the counts, and the encoding reuses its zlib writer:
// hdrhistogram-go makes one per Encode (~800 KB) and scans every bucket
// for each of Max and Mean, which cost seconds per snapshot of 1,000
// sent steps.
func LatencyOfCounts(counts []int64) Latency {
	counts = counts[:CountsLen]
	var l Latency
	first, last := nonZeroRange(counts)
	for _, c := range counts[first : last+1] {
		l.Count += c
	}
	if l.Count > 0 {
		l.MinUS, _ = bucketOf(first)
		lo, w := bucketOf(last)
		l.MaxUS = lo + w - 1
		var ranks [len(latencyPercentiles)]int64
		for k, p := range latencyPercentiles {
			ranks[k] = percentileRank(p, l.Count)
		}
		var vals [len(latencyPercentiles)]int64
		total := float64(l.Count)
		var mean float64
		var cum int64
		k := 0
		for i := first; i <= last; i++ {
			c := counts[i]
			if c == 0 {
				continue
			}
			lo, w := bucketOf(i)
			// The library's expression and order, so the float sums alike.
			mean += float64(c) * float64(lo+w>>1) / total
			cum += c
			for k < len(ranks) && cum >= ranks[k] {
				vals[k] = lo + w - 1
				k++
			}
		}
		l.AvgUS = mean
		l.P50US, l.P75US, l.P90US, l.P95US, l.P99US, l.P999US = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]
	}
	// An empty histogram encodes its one count at index 0, as the library's.
	l.HDR = encodeCounts(counts[:max(last+1, 1)], first)
	return l
}

// nonZeroRange returns the indexes of the first and last non-zero counts,
// or 0 and -1 if there are none. A step's latencies fill a few of the 22
// magnitudes, so most of the array is zeros, skipped 8 at a time.
func nonZeroRange(counts []int64) (first, last int) {
	n := len(counts)
	first = 0
	for first+8 <= n {
		b := counts[first : first+8 : first+8]
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			break
		}
		first += 8
	}
	for first < n && counts[first] == 0 {
		first++
	}
	if first == n {
		return 0, -1
	}
	last = n - 1
	for last-8 >= first {
		b := counts[last-7 : last+1 : last+1]
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			break
		}
		last -= 8
	}
	for counts[last] == 0 {
		last--
	}
	return first, last
}

// encoder holds the buffers and zlib writer one encoding needs; they are
// pooled so a snapshot of many steps allocates little more than the
// encoded strings.
type encoder struct {
	raw []byte
	z   bytes.Buffer
	zw  *zlib.Writer
	out []byte
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	// BestCompression is what the library writes; the level is valid.
	e.zw, _ = zlib.NewWriterLevel(&e.z, zlib.BestCompression)
	return e
}}

// encodeCounts is hdrhistogram-go's Encode(V2CompressedEncodingCookieBase)
// of a histogram of NewHistogram's geometry whose counts up to its
// highest non-zero one are counts, the first lead of them zeros.
func encodeCounts(counts []int64, lead int) string {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)

	raw := append(e.raw[:0], make([]byte, v2HeaderLen)...)
	i := 0
	if lead > 1 {
		raw = appendZigZag(raw, -int64(lead))
		i = lead
	}
	for i < len(counts) {
		c := counts[i]
		i++
		if c == 0 {
			zeros := int64(1)
			for i < len(counts) && counts[i] == 0 {
				zeros++
				i++
			}
			if zeros > 1 {
				c = -zeros
			}
		}
		raw = appendZigZag(raw, c)
	}
	binary.BigEndian.PutUint32(raw[0:], uint32(v2Cookie))
	binary.BigEndian.PutUint32(raw[4:], uint32(len(raw)-v2HeaderLen))
	binary.BigEndian.PutUint32(raw[8:], 0) // normalizing index offset
	binary.BigEndian.PutUint32(raw[12:], HistSigFigs)
	binary.BigEndian.PutUint64(raw[16:], HistLowUS)
	binary.BigEndian.PutUint64(raw[24:], HistHighUS)
	binary.BigEndian.PutUint64(raw[32:], math.Float64bits(1))
	e.raw = raw

	e.z.Reset()
	// The outer header's 8 bytes go first, its length filled in after.
	var outer [8]byte
	// Writes into memory (a bytes.Buffer) cannot fail.
	e.z.Write(outer[:])
	e.zw.Reset(&e.z)
	_, _ = e.zw.Write(raw)
	_ = e.zw.Close()
	buf := e.z.Bytes()
	binary.BigEndian.PutUint32(buf[0:], uint32(v2CompressedCookie))
	binary.BigEndian.PutUint32(buf[4:], uint32(len(buf)-8))

	e.out = base64.StdEncoding.AppendEncode(e.out[:0], buf)
	return string(e.out)
}

// appendZigZag appends v as hdrhistogram-go writes it: ZigZag, then
// LEB128 of at most 9 bytes, the ninth holding a full 8 bits (where a
// standard varint would take 10).
func appendZigZag(b []byte, v int64) []byte {
	u := uint64(v<<1 ^ v>>63)
	for i := 0; i < 8; i++ {
		if u>>7 == 0 {
			return append(b, byte(u))
		}
		b = append(b, byte(u&0x7f|0x80))
		u >>= 7
	}
	return append(b, byte(u))
}

// sharedGeometry reports whether h has NewHistogram's geometry and the
// default conversion ratio, so its counts can go to LatencyOfCounts.
func sharedGeometry(h *hdr.Histogram, s *hdr.Snapshot) bool {
	return h.LowestTrackableValue() == HistLowUS && h.HighestTrackableValue() == HistHighUS &&
		h.SignificantFigures() == HistSigFigs && len(s.Counts) == CountsLen &&
		(s.IntegerToDoubleConversionRatio == 0 || s.IntegerToDoubleConversionRatio == 1)
}
