package run

import "time"

// waitPace schedules a user's next iteration under a drawn pace
// (load.pace: {exponential: 2s}): the next start is the last one's
// intended start plus a fresh draw, so the starts are the renewal process
// the distribution describes (a Poisson process for an exponential) and
// a late iteration does not move the schedule, as with a fixed pace. It
// reports whether the user now waits; false means its next iteration is
// due already and starts at once, its latency counted from the intended
// start.
func (cd *closedDriver) waitPace(su *schedUser) bool {
	su.next = su.next.Add(su.cu.u.Draw(cd.plan.Load.PaceDist))
	if !time.Now().Before(su.next) {
		return false
	}
	su.due = su.next
	cd.waiting.add(su)
	return true
}
