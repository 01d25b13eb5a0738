// Package sched turns a load profile into numbers over time: how many users
// should be running, and when each open-model arrival is due. Everything
// here is a pure function of elapsed time, so it is table-tested without a
// clock and segments of a distributed run compute the same schedule.
package sched

import (
	"math"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// TargetAt is the stage value (users or arrivals/s) at elapsed time t. After
// the last stage it returns the last stage's end value.
func TargetAt(stages []plan.Stage, t time.Duration) float64 {
	return plan.TargetAt(stages, t)
}

// UsersAt is the number of closed-model users that should run at t.
func UsersAt(stages []plan.Stage, t time.Duration) int {
	return int(math.Round(TargetAt(stages, t)))
}

// MaxTarget is the highest value the profile reaches.
func MaxTarget(stages []plan.Stage) float64 {
	m := 0.0
	for _, s := range stages {
		m = math.Max(m, math.Max(s.From, s.To))
	}
	return m
}

// piece is a part of the arrival schedule where the rate is linear in time.
type piece struct {
	start    time.Duration
	dur      time.Duration
	rate     float64 // arrivals/s at the piece's start
	slope    float64 // change of rate per second
	cumStart float64 // arrivals due before the piece starts
}

func (p piece) countAt(sec float64) float64 {
	return p.rate*sec + 0.5*p.slope*sec*sec
}

// Arrivals is the open-model schedule: arrival k is due at Time(k). It is
// the inverse of the cumulative arrival count, so rates that change within
// a stage (ramps) place every arrival exactly, without per-tick rounding.
type Arrivals struct {
	pieces []piece
	total  float64
	cursor int
}

// NewArrivals builds the schedule of an open-model profile.
func NewArrivals(stages []plan.Stage) *Arrivals {
	a := &Arrivals{}
	var at time.Duration
	for _, s := range stages {
		if s.Steps > 0 && s.From != s.To {
			step := s.Duration / time.Duration(s.Steps)
			for k := 0; k < s.Steps; k++ {
				d := step
				if k == s.Steps-1 {
					d = s.Duration - step*time.Duration(s.Steps-1)
				}
				r := s.From + (s.To-s.From)*float64(k+1)/float64(s.Steps)
				a.add(at, d, r, 0)
				at += d
			}
			continue
		}
		slope := 0.0
		if s.Duration > 0 {
			slope = (s.To - s.From) / s.Duration.Seconds()
		}
		a.add(at, s.Duration, s.From, slope)
		at += s.Duration
	}
	return a
}

func (a *Arrivals) add(start, dur time.Duration, rate, slope float64) {
	p := piece{start: start, dur: dur, rate: rate, slope: slope, cumStart: a.total}
	a.pieces = append(a.pieces, p)
	a.total += p.countAt(dur.Seconds())
}

// Total is the number of arrivals the whole profile makes (fractional: the
// last arrival is due at floor(Total)-1 when Total is not whole).
func (a *Arrivals) Total() float64 { return a.total }

// Time returns when arrival k (from 0) is due, or false when the profile
// ends first. Calls with increasing k are amortised O(1).
func (a *Arrivals) Time(k int64) (time.Duration, bool) {
	x := float64(k)
	if x >= a.total-1e-9 {
		return 0, false
	}
	if a.cursor >= len(a.pieces) || a.pieces[a.cursor].cumStart > x {
		a.cursor = 0
	}
	for a.cursor < len(a.pieces)-1 && a.pieces[a.cursor+1].cumStart <= x {
		a.cursor++
	}
	p := a.pieces[a.cursor]
	need := x - p.cumStart
	var sec float64
	switch {
	case p.slope == 0:
		if p.rate <= 0 {
			return 0, false
		}
		sec = need / p.rate
	default:
		// Solve rate·t + slope·t²/2 = need for the root inside the piece.
		disc := p.rate*p.rate + 2*p.slope*need
		if disc < 0 {
			disc = 0
		}
		sec = (-p.rate + math.Sqrt(disc)) / p.slope
	}
	d := time.Duration(sec * float64(time.Second))
	if d > p.dur {
		d = p.dur
	}
	return p.start + d, true
}

// Before is the number of arrivals due before t: arrival k is due before t
// exactly when k < Before(t), up to the rounding of Time.
func (a *Arrivals) Before(t time.Duration) int64 {
	if t <= 0 || len(a.pieces) == 0 {
		return 0
	}
	cum := a.total
	for _, p := range a.pieces {
		if t < p.start+p.dur {
			cum = p.cumStart + p.countAt((t - p.start).Seconds())
			break
		}
	}
	// Arrival k exists while k < total (Time); a count past the last one
	// would name arrivals that never come.
	last := math.Ceil(a.total - 1e-9)
	n := math.Min(math.Ceil(cum-1e-9), last)
	if n < 0 {
		return 0
	}
	return int64(n)
}

// PaceDelay is how long a paced user waits before iteration iter (from 0),
// given the time elapsed since the user started. Iterations are due every
// pace; a late user starts at once and does not try to catch up with a burst.
func PaceDelay(pace time.Duration, iter int64, sinceStart time.Duration) time.Duration {
	due := pace * time.Duration(iter)
	if sinceStart >= due {
		return 0
	}
	return due - sinceStart
}
