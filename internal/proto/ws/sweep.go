package ws

import (
	"container/heap"
	"sync"
	"time"
)

// sweeper wakes the keep-alive and silence checks of every connection in
// the process from one timer. A timer per connection cost about 130 bytes
// of heap on each idle connection (the runtime timer and the closure it
// calls); here a connection costs one slot in a heap ordered by when it
// next needs a look. Each due connection is checked on a goroutine of its
// own, as a timer's function would be, so one slow keep-alive write does
// not hold back the others.
type sweeper struct {
	mu    sync.Mutex
	q     dueQueue
	timer *time.Timer
	armed int64 // clock() the timer fires at; 0: not armed
	due   []*Conn
}

var sweep sweeper

// schedule makes c due at when (clock()), replacing any earlier entry.
// A connection that has ended is not scheduled: end removes it under the
// same lock after setting ended, so one of the two always sees the other.
func (s *sweeper) schedule(c *Conn, when int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ended.Load() {
		return
	}
	c.due = when
	if c.slot >= 0 {
		heap.Fix(&s.q, int(c.slot))
	} else {
		heap.Push(&s.q, c)
	}
	s.arm()
}

// remove takes c out of the queue (connection ended).
func (s *sweeper) remove(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.slot >= 0 {
		heap.Remove(&s.q, int(c.slot))
	}
}

// arm sets the timer for the earliest connection when it is not already
// set at or before then. Caller holds mu.
func (s *sweeper) arm() {
	if len(s.q) == 0 {
		return
	}
	next := s.q[0].due
	if s.armed != 0 && s.armed <= next {
		return
	}
	s.armed = next
	d := time.Duration(next - clock())
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.fire)
	} else {
		s.timer.Reset(d)
	}
}

func (s *sweeper) fire() {
	s.mu.Lock()
	now := clock()
	s.armed = 0
	due := s.due[:0]
	for len(s.q) > 0 && s.q[0].due <= now {
		due = append(due, heap.Pop(&s.q).(*Conn))
	}
	s.arm()
	// The checks take mu again only to schedule themselves, after this
	// returns.
	for _, c := range due {
		go c.tick()
	}
	clear(due)
	s.due = due[:0]
	s.mu.Unlock()
}

// dueQueue is a min-heap of connections by due; each knows its slot so
// that it can be moved or removed without a search.
type dueQueue []*Conn

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].due < q[j].due }
func (q dueQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].slot, q[j].slot = int32(i), int32(j)
}
func (q *dueQueue) Push(x any) {
	c := x.(*Conn)
	c.slot = int32(len(*q))
	*q = append(*q, c)
}
func (q *dueQueue) Pop() any {
	old := *q
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	c.slot = -1
	if cap(*q) > 64 && len(*q) < cap(*q)/4 {
		// A population that closed gives its slots back.
		*q = append(dueQueue(nil), *q...)
	}
	return c
}
