package vu

import (
	"errors"
	"fmt"
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
