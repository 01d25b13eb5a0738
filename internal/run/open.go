package run

import (
	"errors"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
)

func isExhausted(err error) bool { return errors.Is(err, vu.ErrDataExhausted) }

type arrival struct {
	sc       *vu.Scenario
	intended time.Time
}

// worker is one goroutine of a pool, fed one job at a time: an open-model
// arrival (the worker is a slot with its own user and connection, u) or a
// due closed-model user, which brings its own user (u is nil).
type worker[J any] struct {
	u    *vu.User
	jobs chan J
}

// idleStack hands work to the most recently idle worker. Last in, first
// out keeps the busy set small and its connections hot; a FIFO would cycle
// through every connection the pool ever opened.
type idleStack[J any] struct {
	mu     sync.Mutex
	idle   []*worker[J]
	closed bool
	// max, when set, is how many idle workers the stack keeps; a worker
	// past it ends (push reports false).
	max int
}

func (s *idleStack[J]) pop() *worker[J] {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.idle)
	if n == 0 {
		return nil
	}
	w := s.idle[n-1]
	s.idle = s.idle[:n-1]
	return w
}

// closeAll ends the idle workers; workers still busy find the stack
// closed when they finish (see push).
func (s *idleStack[J]) closeAll() {
	s.mu.Lock()
	for _, w := range s.idle {
		close(w.jobs)
	}
	s.idle = nil
	s.closed = true
	s.mu.Unlock()
}

// push returns a worker to the stack, or reports false when the stack was
// closed or is full and the worker should end.
func (s *idleStack[J]) push(w *worker[J]) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.max > 0 && len(s.idle) >= s.max {
		return false
	}
	s.idle = append(s.idle, w)
	return true
}

// openDriver runs the open model's arrivals on goroutine workers, when
// the event loop does not (runOpenLoop, engine.go).
type openDriver struct{ *runner }

// runOpen starts iterations at the profile's arrival times, whatever the
// target does. Each arrival goes to an idle worker; with none idle a new
// worker starts, up to max_in_flight; past that the arrival is dropped and
// counted, never silently skipped. The scheduler sleeps until the next due
// arrival and then starts every arrival that is due, each with its own
// intended time, so timer coarseness shows up as measured lag instead of
// shifting the schedule.
func (od *openDriver) runOpen() {
	if od.runOpenLoop() { // engine.go
		return
	}
	sch := sched.NewArrivals(od.plan.Load.Stages)
	maxWorkers := od.segShare(od.plan.Load.MaxInFlight)
	var idle idleStack[arrival]
	var all []*worker[arrival]
	dropShard := od.rec.Shard(0)
	defer func() {
		for _, w := range all {
			close(w.jobs)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	precise := newPreciseSleeper()
	if precise != nil {
		defer precise.close()
	}
	var batch openBatch
	// A segment fires arrivals k ≡ index (mod count) of the one global
	// schedule, at that schedule's times (segment.go).
	for k := od.firstArrival(sch); ; k += od.seg().Step() {
		at, ok := sch.Time(k)
		if !ok {
			// Wait out the rest of the last stage.
			od.sleepUntil(od.start.Add(od.plan.Load.Duration()))
			return
		}
		due := od.start.Add(at)
		if el := time.Since(od.start); el-at > maxCatchUp {
			k = od.dropOverdue(k, sch.Before(el-maxCatchUp), dropShard) - od.seg().Step()
			continue
		}
		wake := batch.wake(due)
		if !od.waitUntil(wake, timer, precise) {
			return
		}
		if !wake.IsZero() {
			batch.woke(time.Now())
		}
		a := arrival{sc: od.prog.ScenarioFor(k), intended: earlyAt(due)}
		if w := idle.pop(); w != nil {
			w.jobs <- a
			continue
		}
		if len(all) < maxWorkers {
			w := &worker[arrival]{u: od.newUser(), jobs: make(chan arrival, 1)}
			all = append(all, w)
			od.wg.Add(1)
			w.jobs <- a
			go od.openWorker(w, &idle)
			continue
		}
		dropShard.RecordUnfinished(a.sc.FirstRequestStep(), sample.Dropped)
	}
}

// firstArrival is this segment's first arrival to fire. A load that began
// late on its shared schedule (a setup that overran --start-at) skips the
// arrivals due before it began: that part of the profile was missed, and
// is said so (late_start_s), not sent as a burst or counted as dropped.
func (r *runner) firstArrival(sch *sched.Arrivals) int64 {
	k, step := r.seg().First(), r.seg().Step()
	if skip := sch.Before(r.late); skip > k {
		k += (skip - k + step - 1) / step * step
	}
	return k
}

// maxCatchUp is how late the dispatcher still starts an arrival. Past it
// the arrival is counted dropped: the generator could not start it, as
// when every slot is busy. Without a bound, a rate the dispatcher cannot
// keep up with (1e9/s) is worked off one late arrival at a time long past
// the end of its stage, and a stall of the generator turns into a burst.
// A second: a garbage-collection pause or a busy machine's scheduling
// delay is far shorter, and arrivals that late are still sent, with their
// lateness in their latency (measured from the intended start); only a
// generator that cannot keep up at all drops, and says so. The message in
// metrics (lateDropMessage) names this bound.
const maxCatchUp = time.Second

// dropOverdue counts this segment's arrivals from k up to global index
// upto as dropped (at least arrival k) and returns the next one to fire.
// Each counts against its own scenario, in bulk: a cycle of the scenario
// order holds every scenario the run of arrivals can name.
func (r *runner) dropOverdue(k, upto int64, sh *metrics.Shard) int64 {
	return r.dropOverdueStep(k, upto, r.seg().Step(), sh)
}

// dropOverdueStep is dropOverdue over every step-th arrival from k (an
// event loop's share of the segment's, runOpenLoop).
func (r *runner) dropOverdueStep(k, upto, step int64, sh *metrics.Shard) int64 {
	if upto <= k {
		upto = k + 1
	}
	n := (upto - k + step - 1) / step
	cycle := int64(r.prog.ScenarioCycle())
	for j := int64(0); j < n && j < cycle; j++ {
		sc := r.prog.ScenarioFor(k + j*step)
		sh.DroppedN(sc.FirstRequestStep(), (n-j+cycle-1)/cycle)
	}
	return k + n*step
}

// openBatchAhead is how early the dispatcher may start an arrival, with
// the ones due before it, after one sleep.
const openBatchAhead = time.Millisecond

// openBatch is the dispatcher's one sleep for every arrival due within
// openBatchAhead of its end, as the loops batch theirs (evloop's
// batchAhead): a sleep per arrival was a wake-up per arrival, the open
// model's cost.
type openBatch struct{ end time.Time }

// wake is when the dispatcher sleeps until before it starts an arrival
// due at due: its due time, or none (zero) when the last sleep covers it.
func (b *openBatch) wake(due time.Time) time.Time {
	if due.After(b.end) {
		return due
	}
	return time.Time{}
}

// woke starts a batch: arrivals due up to now+openBatchAhead need no
// sleep of their own.
func (b *openBatch) woke(now time.Time) { b.end = now.Add(openBatchAhead) }

// earlyAt is when an arrival due at due and started now counts from: its
// due time, or now when it starts early (openBatchAhead), so that its
// latency is never shorter than its request took and its lag is none.
func earlyAt(due time.Time) time.Time {
	if now := time.Now(); now.Before(due) {
		return now
	}
	return due
}

// preciseBelow is the wait under which the dispatcher sleeps on a timerfd
// (see preciseSleeper) instead of a Go timer.
const preciseBelow = 2 * time.Millisecond

// waitUntil sleeps until due; false means the run stopped meanwhile.
func (od *openDriver) waitUntil(due time.Time, timer *time.Timer, precise *preciseSleeper) bool {
	d := time.Until(due)
	if d > preciseBelow || (d > 0 && precise == nil) {
		wait := d
		if precise != nil {
			wait = d - preciseBelow/2
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-od.soft:
			return false
		}
		d = time.Until(due)
	}
	if d > 0 && precise != nil {
		precise.sleep(d)
	}
	select {
	case <-od.soft:
		return false
	default:
		return true
	}
}

func (od *openDriver) openWorker(w *worker[arrival], idle *idleStack[arrival]) {
	defer od.wg.Done()
	stop := vu.Stop{Soft: od.soft}
	for {
		var a arrival
		var ok bool
		select {
		case a, ok = <-w.jobs:
			if !ok {
				return
			}
		case <-od.soft:
			return
		}
		od.rec.Active.Add(1)
		err := w.u.Iterate(a.sc, a.intended, stop)
		od.rec.Active.Add(-1)
		if err != nil {
			od.handleIterErr(err)
		}
		idle.push(w)
	}
}
