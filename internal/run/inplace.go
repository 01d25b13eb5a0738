package run

import (
	"math"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// A level of a gate or sweep is measured from when its population is in
// place, not from when its ramp was planned to end: a target that opens
// 4,000 SignalR connections slower than the ramp asks would otherwise be
// judged on a window that is partly ramp, or on none at all.

// lastStageAt is when the profile's last stage begins.
func lastStageAt(stages []plan.Stage) time.Duration {
	var d time.Duration
	for i := 0; i+1 < len(stages); i++ {
		d += stages[i].Duration
	}
	return d
}

// watchInPlace calls Options.InPlace once the population is in place
// (see there); it gives up when the run stops first.
func (r *runner) watchInPlace() {
	if r.opts.InPlace == nil {
		return
	}
	from := lastStageAt(r.plan.Load.Stages)
	tick := time.NewTicker(controlEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.soft:
			return
		case <-tick.C:
		}
		el := time.Since(r.start)
		if el < from || !r.usersInPlace(el) || (r.conns != nil && !r.inPlaceConns.Load()) {
			continue
		}
		r.opts.InPlace(r.build(true))
		return
	}
}

// usersInPlace: every closed-model user the profile wants at el has been
// started. Open-model arrivals follow the clock, so they are in place once
// the last stage has begun.
func (r *runner) usersInPlace(el time.Duration) bool {
	if r.plan.Load.Model == plan.Open || !r.prog.HasRequests() {
		return true
	}
	return r.nextID.Load() >= int64(r.segUsersAt(r.plan.Load.Stages, el))
}

// checkInPlace runs on the connection controller, which owns the slots:
// once the last stage has begun, every slot it wants must have finished a
// connection attempt, opened or failed.
func (cr *connRunner) checkInPlace(now time.Time) {
	r := cr.r
	if r.opts.InPlace == nil || r.inPlaceConns.Load() {
		return
	}
	el := now.Sub(r.start)
	if el < lastStageAt(r.plan.Load.Stages) {
		return
	}
	frac := cr.fraction(el)
	for _, p := range cr.pops {
		want := int(math.Round(frac * float64(p.total)))
		for _, s := range p.slots {
			if s.idx < want && !s.tried {
				return
			}
		}
	}
	r.inPlaceConns.Store(true)
}
