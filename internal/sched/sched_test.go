package sched

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/profile"
)

// The plan's stages reach the profile maths whole: duration, both ends
// and steps, for a profile longer than the stack's room as well.
func TestPlanStagesReachTheMaths(t *testing.T) {
	var st []plan.Stage
	for i := range 12 {
		st = append(st, plan.Stage{Duration: time.Second, From: float64(i), To: float64(i + 4), Steps: i % 3, Pos: plan.Pos{Line: i + 1}})
	}
	shapes := Shapes(st)
	for _, at := range []time.Duration{0, 1500 * time.Millisecond, 7 * time.Second, 11900 * time.Millisecond, time.Hour} {
		if got, want := TargetAt(st, at), profile.TargetAt(shapes, at); got != want {
			t.Errorf("TargetAt(%v) = %v, want %v", at, got, want)
		}
		if got, want := UsersAt(st, at), profile.UsersAt(shapes, at); got != want {
			t.Errorf("UsersAt(%v) = %v, want %v", at, got, want)
		}
	}
	if got := MaxTarget(st); got != 15 {
		t.Errorf("MaxTarget = %v, want 15", got)
	}
	if got, want := NewArrivals(st).Total(), profile.NewArrivals(shapes).Total(); got != want || got == 0 {
		t.Errorf("arrivals total %v, want %v", got, want)
	}
	if s := Shape(st[5]); s != (profile.Stage{Duration: time.Second, From: 5, To: 9, Steps: 2}) {
		t.Errorf("Shape = %+v", s)
	}
}

// The per-tick calls convert a usual profile without allocating.
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
