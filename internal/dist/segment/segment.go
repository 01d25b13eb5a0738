// Package segment is the arithmetic of distributed runs: how one test is
// cut into N segments so that every integer quantity of the plan — users,
// arrivals (iterations), connections, tenants, data rows, in-flight slots —
// splits into parts that sum exactly to the whole.
//
// Two cuts are used, both pure functions of (index, count):
//
//   - Share: a count V of interchangeable things (users running at t, the
//     connections of a pool, max_in_flight slots) is cut into contiguous
//     blocks. Segment i gets round(V·(i+1)/N) − round(V·i/N); the sum
//     telescopes to round(V) − round(0) = V for every V, so the segments'
//     users add up to the plan's at every instant, not just at the peak.
//   - Stripe: a numbered sequence (open-model arrival k, row k of a unique
//     CSV source) is dealt round-robin: item k belongs to segment k mod N.
//     Each segment then fires its share of one global arrival schedule, with
//     the intended times of that schedule, and no unique row is used twice.
//
// The package imports only plan, so the run engine and the orchestration
// (package dist) share the same functions.
package segment

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is segment Index (from 0) of Count. The zero value and {0, 1} are
// the whole test.
type Segment struct {
	Index int
	Count int
}

// Whole is the undivided test.
var Whole = Segment{Index: 0, Count: 1}

// Parse reads "i/N" with 0 ≤ i < N (i counts from 0, as Kubernetes'
// JOB_COMPLETION_INDEX does).
func Parse(s string) (Segment, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Segment{}, fmt.Errorf("segment %q: expected INDEX/COUNT such as 0/4 (index from 0)", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return Segment{}, fmt.Errorf("segment %q: expected INDEX/COUNT with whole numbers, such as 0/4", s)
	}
	seg := Segment{Index: i, Count: n}
	if err := seg.Validate(); err != nil {
		return Segment{}, err
	}
	return seg, nil
}

// Validate checks 1 ≤ Count and 0 ≤ Index < Count.
func (s Segment) Validate() error {
	if s.Count < 1 {
		return fmt.Errorf("segment %d/%d: the count must be at least 1", s.Index, s.Count)
	}
	if s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("segment %d/%d: the index must be from 0 to %d (it counts from 0)", s.Index, s.Count, s.Count-1)
	}
	return nil
}

// Norm returns s with a zero Count read as the whole test.
func (s Segment) Norm() Segment {
	if s.Count <= 0 {
		return Whole
	}
	return s
}

// IsWhole reports whether s is the undivided test.
func (s Segment) IsWhole() bool { return s.Norm().Count == 1 }

func (s Segment) String() string {
	s = s.Norm()
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// roundFrac is round(v·j/n) for v, j ≥ 0 and n ≥ 1, halves rounded up, in
// exact integer arithmetic (no float error at large v).
func roundFrac(v, j, n int64) int64 {
	return (2*v*j + n) / (2 * n)
}

// Range is the block [lo, hi) of 0..v-1 that belongs to s under Share.
// Consecutive segments' blocks touch, so the blocks of all segments cover
// 0..v-1 exactly once.
func (s Segment) Range(v int64) (lo, hi int64) {
	s = s.Norm()
	if v <= 0 {
		return 0, 0
	}
	n := int64(s.Count)
	return roundFrac(v, int64(s.Index), n), roundFrac(v, int64(s.Index)+1, n)
}

// Share is s's part of a count v: round(v·(i+1)/N) − round(v·i/N). The
// parts of all N segments sum to v exactly, and each is ⌊v/N⌋ or ⌈v/N⌉.
// A count of 0 or less has no parts.
func (s Segment) Share(v int64) int64 {
	lo, hi := s.Range(v)
	return hi - lo
}

// ShareInt is Share for int counts.
func (s Segment) ShareInt(v int) int { return int(s.Share(int64(v))) }

// Owns reports whether item k (from 0) of a striped sequence — an arrival,
// a row — belongs to s: k mod N == i.
func (s Segment) Owns(k int64) bool {
	s = s.Norm()
	return k >= 0 && k%int64(s.Count) == int64(s.Index)
}

// First and Step walk s's items of a striped sequence:
// for k := s.First(); ; k += s.Step().
func (s Segment) First() int64 { return int64(s.Norm().Index) }

// Step is the distance between s's consecutive striped items.
func (s Segment) Step() int64 { return int64(s.Norm().Count) }

// Stripe is how many of the items 0..n-1 of a striped sequence belong to
// s: ⌈(n−i)/N⌉. The stripes of all segments sum to n.
func (s Segment) Stripe(n int64) int64 {
	s = s.Norm()
	i, c := int64(s.Index), int64(s.Count)
	if n <= i {
		return 0
	}
	return (n - i + c - 1) / c
}

// UserID maps the local-th user a segment starts (from 1) to the id that
// user has in the whole test (from 1), which decides its scenario, tenant
// and random seed. The first Share(peak) users of segment i are the ids of
// its block of the peak, Range(peak) + 1; so at the peak the segments
// together run exactly the users 1..peak that one process would. Users
// started beyond that (replacements after a ramp down and up) get ids above
// peak, dealt round-robin so no two segments reuse one.
func (s Segment) UserID(local, peak int64) int64 {
	s = s.Norm()
	lo, hi := s.Range(peak)
	if local <= hi-lo {
		return lo + local
	}
	extra := local - (hi - lo) - 1
	return max(peak, 0) + extra*int64(s.Count) + int64(s.Index) + 1
}
