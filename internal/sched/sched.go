// Package sched applies the load-profile maths (package profile) to a
// plan's stages: how many users should be running, and when each
// open-model arrival is due. Everything here is a pure function of elapsed
// time, so segments of a distributed run compute the same schedule.
package sched

import (
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/profile"
)

// Shape is a plan stage as the profile maths takes it (its place in the
// plan file left behind).
func Shape(s plan.Stage) profile.Stage {
	return profile.Stage{Duration: s.Duration, From: s.From, To: s.To, Steps: s.Steps}
}

// Shapes is Shape of every stage.
func Shapes(stages []plan.Stage) []profile.Stage {
	return appendShapes(make([]profile.Stage, 0, len(stages)), stages)
}

func appendShapes(buf []profile.Stage, stages []plan.Stage) []profile.Stage {
	for _, s := range stages {
		buf = append(buf, Shape(s))
	}
	return buf
}

// onStack is room for the stages of a usual profile, so the calls made on
// every tick convert them without allocating.
const onStack = 8

// TargetAt is the stage value (users or arrivals/s) at elapsed time t. After
// the last stage it returns the last stage's end value.
func TargetAt(stages []plan.Stage, t time.Duration) float64 {
	var buf [onStack]profile.Stage
	return profile.TargetAt(appendShapes(buf[:0], stages), t)
}

// UsersAt is the number of closed-model users that should run at t.
func UsersAt(stages []plan.Stage, t time.Duration) int {
	var buf [onStack]profile.Stage
	return profile.UsersAt(appendShapes(buf[:0], stages), t)
}

// MaxTarget is the highest value the profile reaches.
func MaxTarget(stages []plan.Stage) float64 {
	var buf [onStack]profile.Stage
	return profile.MaxTarget(appendShapes(buf[:0], stages))
}

// PeakUsers is the most users a closed-model profile runs at once, as
// UsersAt rounds them.
func PeakUsers(stages []plan.Stage) int64 {
	var buf [onStack]profile.Stage
	return profile.PeakUsers(appendShapes(buf[:0], stages))
}

// Arrivals is the open-model schedule (profile.Arrivals).
type Arrivals = profile.Arrivals

// NewArrivals builds the schedule of an open-model profile.
func NewArrivals(stages []plan.Stage) *Arrivals {
	return profile.NewArrivals(Shapes(stages))
}

// PaceDelay is how long a paced user waits before iteration iter (from 0);
// see profile.PaceDelay.
func PaceDelay(pace time.Duration, iter int64, sinceStart time.Duration) time.Duration {
	return profile.PaceDelay(pace, iter, sinceStart)
}
