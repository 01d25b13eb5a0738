package sched

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/profile"
)

// A plan's stages reach the profile maths whole: duration, both ends and
// steps, for a profile of any length.
func TestPlanStagesReachTheMaths(t *testing.T) {
	var st []plan.Stage
	for i := range 12 {
		st = append(st, plan.Stage{Duration: time.Second, From: float64(i), To: float64(i + 4), Steps: i % 3})
	}
	// Stage i runs from i to i+4, linearly (i%3 == 0) or in i%3 steps.
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{
		{0, 0}, {500 * time.Millisecond, 2}, {1500 * time.Millisecond, 5}, {2250 * time.Millisecond, 4},
		{7 * time.Second, 11}, {11900 * time.Millisecond, 15}, {time.Hour, 15},
	} {
		if got := TargetAt(st, c.at); got != c.want {
			t.Errorf("TargetAt(%v) = %v, want %v", c.at, got, c.want)
		}
		if got := UsersAt(st, c.at); got != int(c.want) {
			t.Errorf("UsersAt(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	if got := MaxTarget(st); got != 15 {
		t.Errorf("MaxTarget = %v, want 15", got)
	}
	if got, want := NewArrivals(st).Total(), profile.NewArrivals(st).Total(); got != want || got == 0 {
		t.Errorf("arrivals total %v, want %v", got, want)
	}
}

// The per-tick calls do not allocate.
func TestTickCallsDoNotAllocate(t *testing.T) {
	st := []plan.Stage{{Duration: time.Second, From: 0, To: 10}, {Duration: time.Second, From: 10, To: 10}}
	n := testing.AllocsPerRun(100, func() {
		_ = TargetAt(st, 1500*time.Millisecond)
		_ = UsersAt(st, 500*time.Millisecond)
		_ = MaxTarget(st)
	})
	if n != 0 {
		t.Errorf("%v allocations per tick, want 0", n)
	}
}

// An open model opens 20 ms of its first second's arrivals in connections
// before its first arrival, shared by the parts (segments × loops) that
// take the arrivals, at least one each (a ramp from nothing, with one
// arrival in its first second, opens one); no part, none.
func TestPreopenFollowsTheFirstSecondsRate(t *testing.T) {
	flat := func(rate float64) *Arrivals {
		return NewArrivals([]profile.Stage{{Duration: time.Minute, From: rate, To: rate}})
	}
	for _, c := range []struct {
		a     *Arrivals
		parts int64
		want  int
	}{
		{flat(20000), 1, 400}, {flat(20000), 2, 200}, {flat(20000), 3, 134},
		{flat(5000), 1, 100}, {flat(40000), 1, 800}, {flat(100), 1, 2}, {flat(100), 4, 1},
		{NewArrivals([]profile.Stage{{Duration: time.Minute, From: 0, To: 60}}), 1, 1},
		{flat(20000), 0, 0},
	} {
		if got := Preopen(c.a, c.parts); got != c.want {
			t.Errorf("Preopen(%v/s first second, %d parts) = %d, want %d", c.a.Before(time.Second), c.parts, got, c.want)
		}
	}
}
