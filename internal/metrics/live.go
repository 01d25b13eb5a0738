package metrics

import (
	"sync"
	"sync/atomic"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// liveHist is the sparse counts that recorders write without a lock: a
// success costs one atomic add to its bucket, where it took a shard mutex
// and three histogram writes. Tick drains it (each bucket swapped to zero,
// so a count lands in exactly one interval) into the step's cumulative
// counts and the interval's histogram; a snapshot reads it without
// draining. Chunks are made at their first value, as sparseHist's.
type liveHist struct {
	chunks [numChunks]atomic.Pointer[[chunkLen]uint32]
	// dirty is set after a write and cleared by the drain before it reads
	// the buckets: a write the drain misses sets it again, so an idle
	// step costs Tick one load.
	dirty atomic.Bool

	// wraps counts, per bucket, the 2³² values a bucket lost by wrapping
	// between two drains; a drain at every interval makes it a safety net.
	mu    sync.Mutex
	wraps map[int32]int64
}

func (h *liveHist) record(us int64) {
	i := countsIndex(us)
	c := h.chunks[i>>chunkShift].Load()
	if c == nil {
		c = h.chunk(i >> chunkShift)
	}
	if atomic.AddUint32(&c[i&(chunkLen-1)], 1) == 0 {
		h.wrapped(i)
	}
	if !h.dirty.Load() {
		h.dirty.Store(true)
	}
}

func (h *liveHist) chunk(ci int32) *[chunkLen]uint32 {
	c := new([chunkLen]uint32)
	if h.chunks[ci].CompareAndSwap(nil, c) {
		return c
	}
	return h.chunks[ci].Load()
}

func (h *liveHist) wrapped(i int32) {
	h.mu.Lock()
	if h.wraps == nil {
		h.wraps = map[int32]int64{}
	}
	h.wraps[i] += 1 << 32
	h.mu.Unlock()
}

// drain moves every count into cum and, when set, into interval (a
// histogram of result.NewHistogram's geometry), and returns how many it
// moved. Only one drain or snapshot may run at a time (Recorder.mu).
func (h *liveHist) drain(cum *sparseHist, interval *hdr.Histogram) (n int64) {
	if h == nil || !h.dirty.Swap(false) {
		return 0
	}
	move := func(i int32, k int64) {
		cum.add(i, k)
		if interval != nil {
			_ = interval.RecordValues(valueAt(i), k) // a bucket's own value: in range
		}
		n += k
	}
	for ci := range h.chunks {
		c := h.chunks[ci].Load()
		if c == nil {
			continue
		}
		base := int32(ci) << chunkShift
		for j := range c {
			if atomic.LoadUint32(&c[j]) == 0 {
				continue
			}
			if k := atomic.SwapUint32(&c[j], 0); k > 0 {
				move(base+int32(j), int64(k))
			}
		}
	}
	h.mu.Lock()
	wraps := h.wraps
	h.wraps = nil
	h.mu.Unlock()
	for i, k := range wraps {
		move(i, k)
	}
	return n
}

// addCounts adds h's counts, as they stand, into dst (a counts array of
// result.NewHistogram's geometry) and, when set, into open (a histogram
// of that geometry), each bucket read once so the two agree, and returns
// how many it added.
func (h *liveHist) addCounts(dst []int64, open *hdr.Histogram) (n int64) {
	if h == nil {
		return 0
	}
	for ci := range h.chunks {
		c := h.chunks[ci].Load()
		if c == nil {
			continue
		}
		base := int32(ci) << chunkShift
		d := dst[ci<<chunkShift:][:chunkLen]
		for j := range c {
			if k := atomic.LoadUint32(&c[j]); k > 0 {
				d[j] += int64(k)
				n += int64(k)
				if open != nil {
					_ = open.RecordValues(valueAt(base+int32(j)), int64(k)) // a bucket's own value: in range
				}
			}
		}
	}
	h.mu.Lock()
	for i, k := range h.wraps {
		dst[i] += k
		n += k
		if open != nil {
			_ = open.RecordValues(valueAt(i), k) // a bucket's own value: in range
		}
	}
	h.mu.Unlock()
	return n
}

// liveOf returns *p, making it at its first use.
func liveOf(p *atomic.Pointer[liveHist]) *liveHist {
	if h := p.Load(); h != nil {
		return h
	}
	h := &liveHist{}
	if p.CompareAndSwap(nil, h) {
		return h
	}
	return p.Load()
}

// statusTable counts a step's HTTP statuses: a step sees a handful, so a
// few slots claimed by compare-and-swap take them without a lock; a rare
// step with more puts the rest in more, under the shard's lock.
type statusTable struct {
	slots [4]statusSlot
	more  []statusCount
}

type statusSlot struct {
	code atomic.Int32
	n    atomic.Int64
}

type statusCount struct {
	code  int
	count int64
}

// count counts one response with this status in a free or matching slot
// and reports whether it found one.
func (t *statusTable) count(code int) bool {
	c := int32(code)
	for i := range t.slots {
		sl := &t.slots[i]
		k := sl.code.Load()
		if k == 0 && !sl.code.CompareAndSwap(0, c) {
			k = sl.code.Load()
		} else if k == 0 {
			k = c
		}
		if k == c {
			sl.n.Add(1)
			return true
		}
	}
	return false
}

// countMore counts one response with a status past the slots. Called
// under the shard's lock.
func (t *statusTable) countMore(code int) {
	for i := range t.more {
		if t.more[i].code == code {
			t.more[i].count++
			return
		}
	}
	t.more = append(t.more, statusCount{code, 1})
}

// each calls f with every status counted so far. Called under the shard's
// lock, for more.
func (t *statusTable) each(f func(code int, n int64)) {
	for i := range t.slots {
		sl := &t.slots[i]
		if c := sl.code.Load(); c != 0 {
			if n := sl.n.Load(); n > 0 {
				f(int(c), n)
			}
		}
	}
	for _, sc := range t.more {
		f(sc.code, sc.count)
	}
}
