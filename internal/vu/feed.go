package vu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/plan"
)

// ErrDataExhausted means a unique data source has handed out every row.
var ErrDataExhausted = errors.New("data exhausted")

// Feeder hands out rows of one data source to every user of the run.
type Feeder struct {
	src  *plan.DataSource
	next atomic.Int64
	// tenantNext holds one cursor per tenant for a source partitioned by
	// tenant (by_tenant), so each tenant walks its own rows.
	tenantNext map[int]*atomic.Int64
	// Stride and Offset let segments of a distributed run share one file:
	// segment i of N takes rows i, i+N, i+2N, ... so unique rows never repeat
	// across segments.
	Stride, Offset int64
}

// NewFeeder returns a feeder for src (one segment of one).
func NewFeeder(src *plan.DataSource) *Feeder {
	f := &Feeder{src: src, Stride: 1}
	if src.ByTenant != "" {
		f.tenantNext = make(map[int]*atomic.Int64, len(src.TenantRows))
		for t := range src.TenantRows {
			f.tenantNext[t] = new(atomic.Int64)
		}
	}
	return f
}

type randomSource interface{ Int64N(int64) int64 }

// Next returns the row for the caller's next iteration.
func (f *Feeder) Next(rnd randomSource) ([]string, error) {
	return f.pick(f.src.Rows, &f.next, rnd, "")
}

// NextFor is Next for a user of tenant t: a partitioned source hands out
// only t's rows (the plan checked every tenant has some).
func (f *Feeder) NextFor(tenant int, rnd randomSource) ([]string, error) {
	if f.tenantNext == nil {
		return f.Next(rnd)
	}
	cur := f.tenantNext[tenant]
	if cur == nil || len(f.src.TenantRows[tenant]) == 0 {
		return nil, fmt.Errorf("%q has no rows for tenant %d", f.src.Name, tenant)
	}
	return f.pick(f.src.TenantRows[tenant], cur, rnd, fmt.Sprintf(" for tenant %d", tenant))
}

func (f *Feeder) pick(rows [][]string, cur *atomic.Int64, rnd randomSource, whose string) ([]string, error) {
	n := int64(len(rows))
	switch f.src.Pick {
	case plan.PickRandom:
		return rows[rnd.Int64N(n)], nil
	case plan.PickUnique:
		if f.src.ShareCount > 1 {
			return f.share(rows, cur, whose)
		}
		k := (cur.Add(1)-1)*f.Stride + f.Offset
		if k >= n {
			return nil, fmt.Errorf("%w: %q has no unused row left%s (%d rows, pick: unique)", ErrDataExhausted, f.src.Name, whose, n)
		}
		return rows[k], nil
	default:
		k := (cur.Add(1)-1)*f.Stride + f.Offset
		return rows[k%n], nil
	}
}

// share hands out the rows of a source loaded as one segment's stripe
// (plan.LoadOptions): they are already rows Offset, Offset+Stride, ... of
// the file, so they are taken in order, the same rows in the same order as
// striding over the whole file.
func (f *Feeder) share(rows [][]string, cur *atomic.Int64, whose string) ([]string, error) {
	if int64(f.src.ShareIndex) != f.Offset || int64(f.src.ShareCount) != f.Stride {
		// Rows of another segment would be sent twice across the run.
		return nil, fmt.Errorf("%q was loaded as segment %d/%d's share of unique rows but runs as segment %d/%d",
			f.src.Name, f.src.ShareIndex, f.src.ShareCount, f.Offset, f.Stride)
	}
	k := cur.Add(1) - 1
	if k >= int64(len(rows)) {
		return nil, fmt.Errorf("%w: %q has no unused row left%s (segment %d/%d's share: %d of the file's %d rows, pick: unique)",
			ErrDataExhausted, f.src.Name, whose, f.Offset, f.Stride, len(rows), f.src.TotalRows)
	}
	return rows[k], nil
}

// Carry keeps data cursors from one run to the next, for a command that
// runs one plan several times in a row (the levels of a gate or sweep): a
// unique row handed out at one level is never handed out again at the
// next, and sequential rows go on where the last level stopped.
//
// The ids templates render go on too, so a level never sends one an
// earlier level sent: {{ vu }} of a level's users starts after the highest
// of the levels before, {{ iter }} after the highest iteration of the
// levels before, and {{ uuid }} and rand_int draw from generators seeded
// by the carried {{ vu }} rather than by the level's own user number,
// which starts at 1 again at every level.
type Carry struct {
	mu      sync.Mutex
	feeders map[*plan.DataSource]*Feeder
	// seed is the seed every run given this carry draws from, chosen by
	// the first (Seed).
	seed    uint64
	seedSet bool
	// base is added to this run's user ids; next is the highest {{ vu }}
	// handed out so far, the next run's base.
	base int64
	next atomic.Int64
	// iterBase is where this run's iteration counters start; counters are
	// this run's, read when the next run is adopted (this one has ended,
	// so nothing writes them) for the highest iteration it reached.
	iterBase int64
	counters []*int64
}

// Number gives u its {{ vu }} after every earlier run's users and its
// {{ iter }} after every earlier run's iterations.
func (c *Carry) Number(u *User) {
	v := c.base + u.ID
	u.env.VU = v
	if v != u.ID {
		u.rng = userRand(u.prog.Seed, v)
		u.env.Rand = u.rng
	}
	c.Counter(&u.iter)
	for {
		n := c.next.Load()
		if v <= n || c.next.CompareAndSwap(n, v) {
			return
		}
	}
}

// Counter starts an iteration counter of this run (a user's, or a
// connection's count of its connects) after every earlier run's, and
// keeps it so the next run starts after this one's. *n holds the next
// value to hand out.
func (c *Carry) Counter(n *int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*n = c.iterBase
	c.counters = append(c.counters, n)
}

// userRand is a user's generator for {{ uuid }}, rand_int, random rows and
// think draws: the run's seed and the user's number, so a run given the
// same seed draws the same, and no two users (or levels) draw alike.
func userRand(seed uint64, vu int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(vu), seed)) }

// Seed is the seed of the runs given this carry: the first run's choice,
// kept, so the levels of one test are one repeatable draw.
func (c *Carry) Seed(choose func() uint64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.seedSet {
		c.seed, c.seedSet = choose(), true
	}
	return c.seed
}

// Adopt starts a run: p gets the feeders earlier runs used for the same
// sources (and keeps its own for sources new to the carry), and its users
// are numbered after theirs. The earlier run must have ended.
func (c *Carry) Adopt(p *Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base = c.next.Load()
	for _, n := range c.counters {
		c.iterBase = max(c.iterBase, *n)
	}
	c.counters = nil
	if c.feeders == nil {
		c.feeders = map[*plan.DataSource]*Feeder{}
	}
	for i, f := range p.Feeders {
		if prev, ok := c.feeders[f.src]; ok {
			p.Feeders[i] = prev
		} else {
			c.feeders[f.src] = f
		}
	}
}
