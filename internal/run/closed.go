package run

import (
	"time"

	"github.com/stampede-load/stampede/internal/vu"
)

// controlEvery is how often the closed model adjusts the number of users.
// Ramps are smooth at this resolution without a goroutine per change.
const controlEvery = 20 * time.Millisecond

// startBatch is how many users a start loop starts between looks at the
// clock and the stop. A population too large to start before the stage
// ends (or before Ctrl-C) must not hold the run past either: without the
// look, the loop runs until every user of the target exists.
const startBatch = 64

// mayStart reports whether new users may still start: the run has not
// been stopped and the stages have not ended.
func (r *runner) mayStart(end time.Time) bool {
	select {
	case <-r.soft:
		return false
	default:
	}
	return time.Now().Before(end)
}

type closedUser struct {
	u    *vu.User
	quit chan struct{}
}

// runClosed keeps the number of running users at the profile's value: new
// users start at once; users over the target finish their iteration and
// leave (never cut off mid-iteration by a ramp-down). A segment keeps its
// stripe of the profile's users (segUsersAt), which only grows while the
// profile does, and retires its newest first, as one process does: until a
// ramp down is followed by a ramp up, the segments together run exactly
// the users 1..v that one process runs.
func (r *runner) runClosed() {
	stages := r.plan.Load.Stages
	end := r.start.Add(r.plan.Load.Duration())
	r.startEngine() // engine.go
	var running []closedUser
	tick := time.NewTicker(controlEvery)
	defer tick.Stop()
	for {
		now := time.Now()
		if !r.mayStart(end) {
			break
		}
		want := r.segUsersAt(stages, now.Sub(r.start)) // this segment's stripe
		for n := 1; len(running) < want; n++ {
			if n%startBatch == 0 && !r.mayStart(end) {
				break
			}
			if r.eng.loop != nil {
				running = append(running, r.startLoopUser(make(chan struct{})))
				continue
			}
			cu := closedUser{u: r.newUser(), quit: make(chan struct{})}
			running = append(running, cu)
			r.startUser(cu)
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

// closedLoop runs a user that is busy all the time: iteration after
// iteration with no pace and no think, until it is retired or the run stops.
func (r *runner) closedLoop(cu closedUser) {
	defer r.wg.Done()
	r.rec.Active.Add(1)
	defer r.rec.Active.Add(-1)
	sc := r.prog.ScenarioFor(cu.u.ID - 1)
	stop := vu.Stop{Soft: r.soft, Retire: cu.quit}
	for {
		select {
		case <-r.soft:
			return
		case <-cu.quit:
			return
		default:
		}
		if err := cu.u.Iterate(sc, time.Time{}, stop); err != nil {
			r.handleIterErr(err)
			if isExhausted(err) {
				return
			}
		}
	}
}

// phase is the fractional part of id × the golden ratio: a sequence that
// fills [0, 1) evenly whatever its length.
func phase(id int64) float64 {
	const golden = 0.6180339887498949
	x := float64(id) * golden
	return x - float64(int64(x))
}
