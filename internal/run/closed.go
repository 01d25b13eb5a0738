package run

import (
	"sync"
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

// closedDriver runs the closed model: it keeps the profile's number of
// users running (runClosed, or runWaves for a tenant pool in waves), each
// busy user on a goroutine of its own and the waiting ones in a timer heap
// (scheduled.go).
type closedDriver struct {
	*runner
	// waiting holds the users that wait (paced or thinking); see
	// startUser.
	waiting   userQueue
	schedOnce sync.Once
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
func (cd *closedDriver) runClosed() {
	stages := cd.plan.Load.Stages
	end := cd.start.Add(cd.plan.Load.Duration())
	cd.startEngine() // engine.go
	var running []closedUser
	tick := time.NewTicker(controlEvery)
	defer tick.Stop()
	for {
		now := time.Now()
		if !cd.mayStart(end) {
			break
		}
		want := cd.segUsersAt(stages, now.Sub(cd.start)) // this segment's stripe
		for n := 1; len(running) < want; n++ {
			if n%startBatch == 0 && !cd.mayStart(end) {
				break
			}
			if cd.eng.loop != nil {
				running = append(running, cd.startLoopUser(make(chan struct{})))
				continue
			}
			cu := closedUser{u: cd.newUser(), quit: make(chan struct{})}
			running = append(running, cu)
			cd.startUser(cu)
		}
		for len(running) > want {
			last := running[len(running)-1]
			close(last.quit)
			running = running[:len(running)-1]
		}
		wait := time.Until(end)
		if wait > controlEvery {
			wait = controlEvery
		}
		select {
		case <-cd.soft:
			return
		case <-time.After(wait):
		}
	}
}

// closedLoop runs a user that is busy all the time: iteration after
// iteration with no pace and no think, until it is retired or the run stops.
func (cd *closedDriver) closedLoop(cu closedUser) {
	defer cd.wg.Done()
	cd.rec.Active.Add(1)
	defer cd.rec.Active.Add(-1)
	sc := cd.prog.ScenarioFor(cu.u.ID - 1)
	stop := vu.Stop{Soft: cd.soft, Retire: cu.quit}
	for {
		select {
		case <-cd.soft:
			return
		case <-cu.quit:
			return
		default:
		}
		if err := cu.u.Iterate(sc, time.Time{}, stop); err != nil {
			cd.handleIterErr(err)
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
