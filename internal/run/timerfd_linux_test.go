package run

import (
	"sort"
	"testing"
	"time"
)

func TestPreciseSleeperSleeps(t *testing.T) {
	p := newPreciseSleeper()
	if p == nil {
		t.Skip("no timerfd on this system")
	}
	defer p.close()
	start := time.Now()
	if !p.sleep(2 * time.Millisecond) {
		t.Fatal("sleep failed")
	}
	if el := time.Since(start); el < 2*time.Millisecond {
		t.Errorf("woke after %v, before the 2ms asked", el)
	}
}

// BenchmarkWakeLateness compares how late 100µs waits wake on an otherwise
// idle scheduler: a Go timer (which waits in epoll with millisecond
// resolution) against the timerfd the open-model dispatcher uses. The
// reported figure is the p99 lateness in microseconds.
func BenchmarkWakeLateness(b *testing.B) {
	const want = 100 * time.Microsecond
	measure := func(b *testing.B, sleep func(time.Duration)) {
		late := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			start := time.Now()
			sleep(want)
			late = append(late, time.Since(start)-want)
		}
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99-late-µs")
		b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50-late-µs")
	}
	b.Run("go-timer", func(b *testing.B) {
		t := time.NewTimer(time.Hour)
		measure(b, func(d time.Duration) { t.Reset(d); <-t.C })
	})
	b.Run("timerfd", func(b *testing.B) {
		p := newPreciseSleeper()
		if p == nil {
			b.Skip("no timerfd")
		}
		defer p.close()
		measure(b, func(d time.Duration) { p.sleep(d) })
	})
}

// Waits shorter than the time it takes to start waiting (the timer has
// expired before the poller is asked) return, and leave nothing behind
// that would end a later wait early: the first look at the timer after
// arming it does not read it, so an expiry must come from the poller.
func TestPreciseSleeperExpiredBeforeWait(t *testing.T) {
	p := newPreciseSleeper()
	if p == nil {
		t.Skip("no timerfd on this system")
	}
	defer p.close()
	done := make(chan bool, 1)
	go func() {
		ok := true
		for i := 0; i < 200 && ok; i++ {
			ok = p.sleep(time.Nanosecond)
		}
		done <- ok
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("a 1ns sleep failed")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a 1ns sleep never returned: an expiry before the wait was missed")
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		if !p.sleep(2 * time.Millisecond) {
			t.Fatal("sleep failed")
		}
		if el := time.Since(start); el < 2*time.Millisecond {
			t.Errorf("woke after %v, before the 2ms asked", el)
		}
	}
}
