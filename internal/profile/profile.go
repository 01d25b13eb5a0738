// Package profile is the load profile's maths, pure and without a clock:
// the value a profile of stages holds at an instant (users or arrivals
// per second), its peak, its shape scaled to another peak, and when each
// open-model arrival is due. It imports nothing of the project, so the
// plan, the scheduler, the segments of a distributed run and the run
// itself can all compute the same numbers from the same functions.
package profile

import (
	"math"
	"time"
)

// Model is the load model.
type Model uint8

const (
	// Closed runs a number of virtual users, each looping its scenario.
	Closed Model = iota
	// Open starts iterations at a given arrival rate, whether or not earlier
	// ones finished.
	Open
)

func (m Model) String() string {
	if m == Open {
		return "open"
	}
	return "closed"
}

// What a level of a gates, sweep or capacity run varies: the users of a
// closed profile, the rate of an open one, or the tenants of a pool.
const (
	VaryUsers   = "users"
	VaryRate    = "rate"
	VaryTenants = "tenants"
)

// Stage is one part of a profile: the value goes from From to To over
// Duration, linearly or, with Steps > 0, in that many equal jumps.
type Stage struct {
	Duration time.Duration
	From, To float64
	Steps    int
}

// ValueAt is the stage's value t into it.
func (s Stage) ValueAt(t time.Duration) float64 {
	if s.From == s.To || s.Duration <= 0 {
		return s.To
	}
	frac := float64(t) / float64(s.Duration)
	if s.Steps > 0 {
		// "0 -> 400 in 4 steps" holds 100, 200, 300, 400 for a quarter
		// each, as Azure Load Testing's step ramps do.
		k := math.Floor(frac * float64(s.Steps))
		return s.From + (s.To-s.From)*(k+1)/float64(s.Steps)
	}
	return s.From + (s.To-s.From)*frac
}

// TargetAt is the profile's value (users or arrivals/s) at elapsed time t.
// After the last stage it is the last stage's end value.
func TargetAt(stages []Stage, t time.Duration) float64 {
	for _, s := range stages {
		if t < s.Duration {
			return s.ValueAt(t)
		}
		t -= s.Duration
	}
	if len(stages) == 0 {
		return 0
	}
	return stages[len(stages)-1].To
}

// UsersAt is the number of closed-model users that should run at t.
func UsersAt(stages []Stage, t time.Duration) int {
	return int(math.Round(TargetAt(stages, t)))
}

// MaxTarget is the highest value the profile reaches.
func MaxTarget(stages []Stage) float64 {
	m := 0.0
	for _, s := range stages {
		m = max(m, s.From, s.To)
	}
	return m
}

// PeakUsers is the most users a closed-model profile runs at once, as
// UsersAt rounds them.
func PeakUsers(stages []Stage) int64 {
	return int64(math.Round(MaxTarget(stages)))
}

// Duration is the profile's length.
func Duration(stages []Stage) time.Duration {
	var d time.Duration
	for _, s := range stages {
		d += s.Duration
	}
	return d
}

// Scale keeps the profile's shape and sets its peak to peak; a flat zero
// profile becomes a flat peak.
func Scale(stages []Stage, peak float64) []Stage {
	out := make([]Stage, len(stages))
	m := MaxTarget(stages)
	for i, s := range stages {
		if m == 0 {
			s.From, s.To = peak, peak
		} else {
			s.From, s.To = s.From*peak/m, s.To*peak/m
		}
		out[i] = s
	}
	return out
}

// PaceDelay is how long a paced user waits before iteration iter (from 0),
// given the time elapsed since the user started. Iterations are due every
// pace; a late user starts at once and does not try to catch up with a
// burst.
func PaceDelay(pace time.Duration, iter int64, sinceStart time.Duration) time.Duration {
	due := pace * time.Duration(iter)
	if sinceStart >= due {
		return 0
	}
	return due - sinceStart
}
