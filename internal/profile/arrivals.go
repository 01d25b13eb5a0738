package profile

import (
	"math"
	"time"
)

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
func NewArrivals(stages []Stage) *Arrivals {
	a := &Arrivals{}
	var at time.Duration
	for _, s := range stages {
		if s.Steps > 0 && s.From != s.To {
			at = a.addSteps(at, s)
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

// addSteps adds a step ramp from at, one flat piece per step, and returns
// where it ends.
func (a *Arrivals) addSteps(at time.Duration, s Stage) time.Duration {
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
	return at
}

func (a *Arrivals) add(start, dur time.Duration, rate, slope float64) {
	p := piece{start: start, dur: dur, rate: rate, slope: slope, cumStart: a.total}
	a.pieces = append(a.pieces, p)
	a.total += p.countAt(dur.Seconds())
}

// Total is the number of arrivals the whole profile makes (fractional: the
// last arrival is due at floor(Total)-1 when Total is not whole).
func (a *Arrivals) Total() float64 { return a.total }

// Count is the number of arrivals that have a due time: how many k Time
// answers for.
func (a *Arrivals) Count() int64 {
	return max(int64(math.Ceil(a.total-1e-9)), 0)
}

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
	switch p.slope {
	case 0:
		if p.rate <= 0 {
			return 0, false
		}
		sec = need / p.rate
	default:
		// Solve rate·t + slope·t²/2 = need for the root inside the piece.
		disc := max(p.rate*p.rate+2*p.slope*need, 0)
		sec = (-p.rate + math.Sqrt(disc)) / p.slope
	}
	d := min(time.Duration(sec*float64(time.Second)), p.dur)
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
