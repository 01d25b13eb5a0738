package run

import (
	"time"

	"github.com/stampede-load/stampede/internal/sched"
	"github.com/stampede-load/stampede/internal/vu"
)

// controlEvery is how often the closed model adjusts the number of users.
// Ramps are smooth at this resolution without a goroutine per change.
const controlEvery = 20 * time.Millisecond

type closedUser struct {
	u    *vu.User
	quit chan struct{}
}

// runClosed keeps the number of running users at the profile's value: new
// users start at once; users over the target finish their iteration and
// leave (never cut off mid-iteration by a ramp-down).
func (r *runner) runClosed() {
	stages := r.plan.Load.Stages
	end := r.start.Add(r.plan.Load.Duration())
	var running []closedUser
	tick := time.NewTicker(controlEvery)
	defer tick.Stop()
	for {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		want := sched.UsersAt(stages, now.Sub(r.start))
		for len(running) < want {
			cu := closedUser{u: r.newUser(), quit: make(chan struct{})}
			running = append(running, cu)
			r.wg.Add(1)
			go r.closedLoop(cu)
		}
		for len(running) > want {
			last := running[len(running)-1]
			close(last.quit)
			running = running[:len(running)-1]
		}
		if len(running) > r.maxUsers {
			r.maxUsers = len(running)
		}
		wait := time.Until(end)
		if wait > controlEvery {
			wait = controlEvery
		}
		select {
		case <-r.soft:
			return
		case <-time.After(wait):
		}
	}
}

func (r *runner) closedLoop(cu closedUser) {
	defer r.wg.Done()
	r.rec.Active.Add(1)
	defer r.rec.Active.Add(-1)
	sc := r.prog.ScenarioFor(cu.u.ID - 1)
	pace := r.plan.Load.Pace
	started := time.Now()
	// A user stops thinking when it is retired or the run stops.
	quit := make(chan struct{})
	go func() {
		select {
		case <-cu.quit:
		case <-r.soft:
		}
		close(quit)
	}()
	stop := vu.Stop{Soft: quit}
	for iter := int64(0); ; iter++ {
		select {
		case <-quit:
			return
		default:
		}
		var intended time.Time
		if pace > 0 {
			d := sched.PaceDelay(pace, iter, time.Since(started))
			intended = started.Add(pace * time.Duration(iter))
			if d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-quit:
					t.Stop()
					return
				}
			}
		}
		if err := cu.u.Iterate(sc, intended, stop); err != nil {
			r.handleIterErr(err)
			if isExhausted(err) {
				return
			}
		}
	}
}
