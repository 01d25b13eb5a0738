package run

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
)

func isExhausted(err error) bool { return errors.Is(err, vu.ErrDataExhausted) }

type arrival struct {
	sc       *vu.Scenario
	intended time.Time
}

// runOpen starts iterations at the profile's arrival times, whatever the
// target does. Each arrival goes to an idle worker; with none idle a new
// worker starts, up to max_in_flight; past that the arrival is dropped and
// counted, never silently skipped. The scheduler sleeps until the next due
// arrival and then starts every arrival that is due, each with its own
// intended time, so timer coarseness shows up as measured lag instead of
// shifting the schedule.
func (r *runner) runOpen() {
	sch := sched.NewArrivals(r.plan.Load.Stages)
	maxWorkers := int64(r.plan.Load.MaxInFlight)
	jobs := make(chan arrival)
	var workers atomic.Int64
	dropShard := r.rec.Shard(0)
	defer close(jobs)
	for k := int64(0); ; k++ {
		at, ok := sch.Time(k)
		if !ok {
			// Wait out the rest of the last stage.
			r.sleepUntil(r.start.Add(r.plan.Load.Duration()))
			return
		}
		due := r.start.Add(at)
		if !r.sleepUntil(due) {
			return
		}
		a := arrival{sc: r.prog.ScenarioFor(k), intended: due}
		select {
		case jobs <- a:
			continue
		default:
		}
		if workers.Load() < maxWorkers {
			workers.Add(1)
			n := workers.Load()
			if int(n) > r.maxUsers {
				r.maxUsers = int(n)
			}
			u := r.newUser()
			r.wg.Add(1)
			go r.openWorker(u, a, jobs)
			continue
		}
		dropShard.RecordUnfinished(a.sc.FirstRequestStep(), sample.Dropped)
	}
}

func (r *runner) openWorker(u *vu.User, first arrival, jobs <-chan arrival) {
	defer r.wg.Done()
	stop := vu.Stop{Soft: r.soft}
	a := first
	for {
		r.rec.Active.Add(1)
		err := u.Iterate(a.sc, a.intended, stop)
		r.rec.Active.Add(-1)
		if err != nil {
			r.handleIterErr(err)
		}
		var ok bool
		select {
		case a, ok = <-jobs:
			if !ok {
				return
			}
		case <-r.soft:
			return
		}
	}
}
