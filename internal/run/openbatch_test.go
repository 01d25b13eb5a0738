package run

import (
	"testing"
	"time"
)

// The dispatcher sleeps once for every run of arrivals due within
// openBatchAhead of a wake-up, on a fake clock that wakes exactly at each
// due time: 20 ms of arrivals 50 µs apart (20,000/s) cost about one sleep
// a millisecond, where it slept once per arrival (400).
func TestOpenBatchSleepsOncePerMillisecond(t *testing.T) {
	start := time.Unix(1000, 0)
	const arrivals = 400
	var b openBatch
	sleeps, early := 0, 0
	for k := 0; k < arrivals; k++ {
		due := start.Add(time.Duration(k) * 50 * time.Microsecond)
		wake := b.wake(due)
		if wake.IsZero() {
			early++
			continue
		}
		if !wake.Equal(due) {
			t.Fatalf("arrival %d: sleeps until %v, it is due at %v", k, wake, due)
		}
		sleeps++
		b.woke(wake) // the fake clock: awake exactly when due
	}
	// Each sleep covers the arrivals due up to a millisecond after it:
	// 21 of them (0 µs, 50 µs, … 1000 µs).
	if want := (arrivals + 20) / 21; sleeps != want || sleeps+early != arrivals {
		t.Errorf("%d sleeps and %d arrivals started early of %d; want %d sleeps", sleeps, early, arrivals, want)
	}
}

// An arrival started before it is due counts from its start, so its
// latency is never shorter than its request took; one started late
// counts from its due time, its lateness in its latency.
func TestEarlyAtNeverAfterNow(t *testing.T) {
	before := time.Now()
	if at := earlyAt(before.Add(time.Hour)); at.Before(before) || at.After(time.Now()) {
		t.Errorf("an arrival due in an hour counts from %v, want its start (%v or after)", at, before)
	}
	due := before.Add(-time.Second)
	if at := earlyAt(due); !at.Equal(due) {
		t.Errorf("a late arrival counts from %v, want its due time %v", at, due)
	}
}
