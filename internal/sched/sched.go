// Package sched is where the run reads its schedule: how many users should
// be running, and when each open-model arrival is due. A plan's stages are
// the profile's own (plan.Stage is profile.Stage), so each call is the
// profile maths itself, without conversion or allocation. Everything here
// is a pure function of elapsed time, so segments of a distributed run
// compute the same schedule.
package sched

import (
	"time"

	"github.com/stampede-load/stampede/internal/profile"
)

// TargetAt is the stage value (users or arrivals/s) at elapsed time t. After
// the last stage it returns the last stage's end value.
func TargetAt(stages []profile.Stage, t time.Duration) float64 {
	return profile.TargetAt(stages, t)
}

// UsersAt is the number of closed-model users that should run at t.
func UsersAt(stages []profile.Stage, t time.Duration) int {
	return profile.UsersAt(stages, t)
}

// MaxTarget is the highest value the profile reaches.
func MaxTarget(stages []profile.Stage) float64 {
	return profile.MaxTarget(stages)
}

// Arrivals is the open-model schedule (profile.Arrivals).
type Arrivals = profile.Arrivals

// NewArrivals builds the schedule of an open-model profile.
func NewArrivals(stages []profile.Stage) *Arrivals {
	return profile.NewArrivals(stages)
}

// PaceDelay is how long a paced user waits before iteration iter (from 0);
// see profile.PaceDelay.
func PaceDelay(pace time.Duration, iter int64, sinceStart time.Duration) time.Duration {
	return profile.PaceDelay(pace, iter, sinceStart)
}

// PreopenWindow is how many seconds of the first second's arrivals an
// open model's connections are opened for before its first arrival
// (400 connections at 20,000/s). Arrivals start in batches of a
// millisecond (the loops' batchAhead), each holding its connection for a
// request's time; the rest are there for the stalls of a shared machine.
// After a stall of a few milliseconds the arrivals it held back start at
// once, and each that finds no idle connection dials, at several
// requests' cost: with 5 ms (100 connections) a 2 ms stall at 20,000/s
// made the loop dial more than a hundred at once, fall further behind,
// and end its first second with 2,000 connections and 10 to 50 ms of
// lateness; with 20 ms no run on the 2-core machine dialed beyond them
// (docs/benchmarks.md).
const PreopenWindow = 20 * time.Millisecond

// Preopen is how many connections an open model of a, whose arrivals are
// shared by parts (segments × loops), opens in each part before its first
// arrival: PreopenWindow of the first second's arrivals, at least one.
func Preopen(a *Arrivals, parts int64) int {
	first := a.Before(time.Second)
	if first == 0 || parts < 1 {
		return 0
	}
	window := int64(time.Second / PreopenWindow)
	return int(max((first+window*parts-1)/(window*parts), 1))
}
