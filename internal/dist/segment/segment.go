// Package segment is the arithmetic of distributed runs: how one test is
// cut into N segments so that every integer quantity of the plan — users,
// arrivals (iterations), connections, tenants, data rows, in-flight slots —
// splits into parts that sum exactly to the whole.
//
// Two cuts are used, both pure functions of (index, count):
//
//   - Stripe: a numbered sequence is dealt round-robin: item k (from 0)
//     belongs to segment k mod N, so of the items 0..n-1 segment i has
//     ⌈(n−i)/N⌉. Open-model arrivals (each segment fires its share of one
//     global schedule, at that schedule's intended times), rows of a
//     unique data source (none is used twice), the slots of a connection
//     population, and closed-model users are striped: user k (from 1) of
//     the whole test runs in segment (k−1) mod N, so at an instant with V
//     users segment i runs Stripe(V).
//   - Share: a fixed count V (max_in_flight slots, a per-host connection
//     cap) is cut into contiguous blocks. Segment i gets
//     round(V·(i+1)/N) − round(V·i/N); the parts telescope to exactly V and
//     each is ⌊V/N⌋ or ⌈V/N⌉.
//
// Both sum exactly to V for every V, so either would keep the segments'
// users adding up to the plan's at every instant. Users that vary over
// time are striped all the same, because Share is not monotone in V:
// segment 1/3's Share of 1, 2, 3 users is 1, 0, 1, so on a ramp up it
// would retire a user only to start another one a moment later, and at the
// peak the segments together would run other user ids (so other scenarios,
// tenants and seeds) than one process does. Stripe(V) never falls while V
// rises, and the users a segment runs at V are always its first Stripe(V)
// of the sequence, so while a ramp rises the segments together run exactly
// the users 1..V that one process runs. Share stays for quantities that do
// not change during the run, where only the sum and the balance matter.
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

// Share is s's part of a fixed count v: round(v·(i+1)/N) − round(v·i/N).
// The parts of all N segments sum to v exactly, and each is ⌊v/N⌋ or
// ⌈v/N⌉. A count of 0 or less has no parts. It is not monotone in v (see
// the package doc), so counts that change during a run use Stripe.
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
// s: ⌈(n−i)/N⌉. The stripes of all segments sum to n, and s's never
// decreases as n rises, which is why it is the cut for the users running
// at an instant: a ramp up only ever adds users to each segment.
func (s Segment) Stripe(n int64) int64 {
	s = s.Norm()
	i, c := int64(s.Index), int64(s.Count)
	if n <= i {
		return 0
	}
	return (n - i + c - 1) / c
}

// UserID is the whole-test id (from 1) of the local-th closed-model user
// (from 1) that s starts; the id decides the user's scenario, tenant and
// random seed. Users are striped: the local-th user is item
// First + (local−1)·Step of the sequence, so its id is that + 1. A segment
// that runs Stripe(v) users runs the ids of its stripe of 1..v, and the
// segments together run exactly the users 1..v that one process runs.
// Users started beyond Stripe(peak) (replacements after a ramp down and up)
// continue the stripe above the peak, so no two segments reuse an id. One
// process (Step 1) numbers its users 1, 2, 3, … in the order it starts
// them.
func (s Segment) UserID(local int64) int64 {
	return s.First() + (local-1)*s.Step() + 1
}

// SlotID maps the local-th of s's Share(slots) slots (from 1) of a fixed
// pool, such as the open model's max_in_flight workers, to its id in the
// whole test (from 1): the segment's block Range(slots) + 1, so the
// segments together hold exactly the slots 1..slots that one process
// does. Slots past the share (none in a run) get ids above slots, dealt
// round-robin so no two segments reuse one.
func (s Segment) SlotID(local, slots int64) int64 {
	s = s.Norm()
	lo, hi := s.Range(slots)
	if local <= hi-lo {
		return lo + local
	}
	extra := local - (hi - lo) - 1
	return max(slots, 0) + extra*int64(s.Count) + int64(s.Index) + 1
}
