package profile

import (
	"math"
	"testing"
	"time"
)

func TestTargetAt(t *testing.T) {
	ramp := []Stage{
		{Duration: 4 * time.Second, From: 0, To: 400, Steps: 4},
		{Duration: 2 * time.Second, From: 400, To: 400},
		{Duration: 2 * time.Second, From: 400, To: 0},
	}
	cases := []struct {
		at   time.Duration
		want float64
		why  string
	}{
		{0, 100, "a step ramp starts at its first step, not at 0"},
		{999 * time.Millisecond, 100, "first quarter holds the first step"},
		{time.Second, 200, "second step begins on the quarter"},
		{3500 * time.Millisecond, 400, "last quarter is the target"},
		{5 * time.Second, 400, "steady stage"},
		{7 * time.Second, 200, "linear ramp down is halfway at half time"},
		{time.Hour, 0, "after the end: the last value"},
	}
	for _, c := range cases {
		if got := TargetAt(ramp, c.at); got != c.want {
			t.Errorf("%s: TargetAt(%v) = %v, want %v", c.why, c.at, got, c.want)
		}
	}
}

func TestArrivalsConstantRate(t *testing.T) {
	a := NewArrivals([]Stage{{Duration: 2 * time.Second, From: 100, To: 100}})
	if a.Total() != 200 {
		t.Fatalf("total = %v, want 200", a.Total())
	}
	for _, k := range []int64{0, 1, 99, 199} {
		got, ok := a.Time(k)
		want := time.Duration(k) * 10 * time.Millisecond
		if !ok || absDur(got-want) > time.Microsecond {
			t.Errorf("Time(%d) = %v %v, want %v", k, got, ok, want)
		}
	}
	if _, ok := a.Time(200); ok {
		t.Error("arrival 200 of a 200-arrival profile must not exist")
	}
}

func TestArrivalsRampMatchesIntegral(t *testing.T) {
	// 0 -> 100/s over 10 s makes 500 arrivals; arrival k is due where
	// 5·t² = k, i.e. t = sqrt(k/5).
	a := NewArrivals([]Stage{{Duration: 10 * time.Second, From: 0, To: 100}, {Duration: time.Second, From: 100, To: 100}})
	if math.Abs(a.Total()-600) > 1e-9 {
		t.Fatalf("total = %v, want 600", a.Total())
	}
	for _, k := range []int64{1, 20, 125, 499} {
		got, _ := a.Time(k)
		want := time.Duration(math.Sqrt(float64(k)/5) * float64(time.Second))
		if absDur(got-want) > time.Microsecond {
			t.Errorf("Time(%d) = %v, want %v", k, got, want)
		}
	}
	// The steady second after the ramp continues at 10 ms spacing.
	got, _ := a.Time(550)
	if want := 10*time.Second + 500*time.Millisecond; absDur(got-want) > time.Microsecond {
		t.Errorf("Time(550) = %v, want %v", got, want)
	}
}

func TestArrivalsMonotonic(t *testing.T) {
	a := NewArrivals([]Stage{
		{Duration: 3 * time.Second, From: 10, To: 1000, Steps: 3},
		{Duration: 2 * time.Second, From: 1000, To: 0},
	})
	var prev time.Duration
	n := int64(0)
	for ; ; n++ {
		at, ok := a.Time(n)
		if !ok {
			break
		}
		if at < prev {
			t.Fatalf("arrival %d at %v is before arrival %d at %v", n, at, n-1, prev)
		}
		prev = at
	}
	if want := int64(math.Ceil(a.Total() - 1e-9)); n != want {
		t.Errorf("made %d arrivals, want %d", n, want)
	}
	// Random access after sequential access still answers the same.
	first, _ := a.Time(5)
	again, _ := NewArrivals([]Stage{{Duration: 3 * time.Second, From: 10, To: 1000, Steps: 3}}).Time(5)
	if first != again {
		t.Errorf("Time(5) after a full scan = %v, fresh = %v", first, again)
	}
}

func TestPaceDelay(t *testing.T) {
	cases := []struct {
		iter  int64
		since time.Duration
		want  time.Duration
		why   string
	}{
		{0, 0, 0, "first iteration starts at once"},
		{1, 300 * time.Millisecond, 700 * time.Millisecond, "waits for the next slot"},
		{3, 3500 * time.Millisecond, 0, "late: start now, no burst to catch up"},
	}
	for _, c := range cases {
		if got := PaceDelay(time.Second, c.iter, c.since); got != c.want {
			t.Errorf("%s: got %v want %v", c.why, got, c.want)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// Before is the inverse the open model's bounded catch-up relies on: the
// arrivals due before t are exactly 0..Before(t)-1, on ramps, step ramps
// and flat stages alike, and it never counts arrivals past the last.
func TestArrivalsBeforeInvertsTime(t *testing.T) {
	a := NewArrivals([]Stage{
		{Duration: 2 * time.Second, From: 0, To: 50},
		{Duration: 2 * time.Second, From: 50, To: 200, Steps: 3},
		{Duration: time.Second, From: 30, To: 30},
	})
	if got := a.Before(0); got != 0 {
		t.Errorf("Before(0) = %d, want 0", got)
	}
	var k int64
	for ; ; k++ {
		at, ok := a.Time(k)
		if !ok {
			break
		}
		next, ok := a.Time(k + 1)
		if !ok {
			next = 5 * time.Second
		}
		if next == at {
			continue
		}
		mid := at + (next-at)/2
		if got := a.Before(mid); got != k+1 {
			t.Fatalf("Before(%v) = %d, want %d (arrival %d at %v, next at %v)", mid, got, k+1, k, at, next)
		}
	}
	if got := a.Before(time.Hour); got != k {
		t.Errorf("Before(after the end) = %d, want the %d arrivals there are", got, k)
	}
}

// TestShapeHelpers: a scaled profile keeps its shape at the new peak, a
// flat zero one becomes flat at the peak; duration, peak users and the
// arrival count follow the stages.
func TestShapeHelpers(t *testing.T) {
	st := []Stage{{Duration: time.Second, From: 0, To: 50}, {Duration: 3 * time.Second, From: 50, To: 20, Steps: 3}}
	sc := Scale(st, 100)
	if sc[0].To != 100 || sc[1].To != 40 || sc[1].Steps != 3 || st[0].To != 50 {
		t.Errorf("Scale = %+v (input now %+v)", sc, st)
	}
	if flat := Scale([]Stage{{Duration: time.Second}}, 7); flat[0].From != 7 || flat[0].To != 7 {
		t.Errorf("a flat zero profile scaled: %+v", flat)
	}
	if d := Duration(st); d != 4*time.Second {
		t.Errorf("Duration = %v", d)
	}
	if p := PeakUsers([]Stage{{Duration: time.Second, From: 0, To: 2.5}}); p != 3 {
		t.Errorf("PeakUsers = %d, want 3 (rounded as UsersAt rounds)", p)
	}
	a := NewArrivals([]Stage{{Duration: 1500 * time.Millisecond, From: 3, To: 3}})
	if a.Count() != 5 {
		t.Errorf("Count = %d for 4.5 arrivals, want 5", a.Count())
	}
	if _, ok := a.Time(a.Count() - 1); !ok {
		t.Error("the last counted arrival has no time")
	}
	if _, ok := a.Time(a.Count()); ok {
		t.Error("an arrival past Count has a time")
	}
}
