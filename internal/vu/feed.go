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
	// Stride and Offset let segments of a distributed run share one file:
	// segment i of N takes rows i, i+N, i+2N, ... so unique rows never repeat
	// across segments.
	Stride, Offset int64
}

// NewFeeder returns a feeder for src (one segment of one).
func NewFeeder(src *plan.DataSource) *Feeder {
	return &Feeder{src: src, Stride: 1}
}

// Next returns the row for the caller's next iteration.
func (f *Feeder) Next(rnd interface{ Int64N(int64) int64 }) ([]string, error) {
	rows := f.src.Rows
	n := int64(len(rows))
	switch f.src.Pick {
	case plan.PickRandom:
		return rows[rnd.Int64N(n)], nil
	case plan.PickUnique:
		k := (f.next.Add(1)-1)*f.Stride + f.Offset
		if k >= n {
			return nil, fmt.Errorf("%w: %q has no unused row left (%d rows, pick: unique)", ErrDataExhausted, f.src.Name, n)
		}
		return rows[k], nil
	default:
		k := (f.next.Add(1)-1)*f.Stride + f.Offset
		return rows[k%n], nil
	}
}
