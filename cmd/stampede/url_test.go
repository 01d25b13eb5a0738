package main

import (
	"testing"

	"github.com/stampede-load/stampede/internal/session"
)

// url --open without -c bounds requests in flight by the arrivals of one
// second at the rate, within 64 and 10,000, where a fixed bound (50 for
// -c's default, 256 as often written) dropped arrivals whenever the
// server stalled longer than bound ÷ rate.
func TestOpenInFlightFollowsTheRate(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want int
	}{
		{0.5, 64}, {10, 64}, {64, 64}, {256, 256}, {1000.2, 1001},
		{5000, 5000}, {9999, 9999}, {20000, 10000}, {1e9, 10000},
	} {
		if got := openInFlight(c.rate); got != c.want {
			t.Errorf("openInFlight(%v) = %d, want %d", c.rate, got, c.want)
		}
	}
}

// The derived bound is url --open's default only: -c given, or the closed
// model, keep -c as written (no derived bound).
func TestURLOpenDefaultBoundOnlyWithoutC(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--open", "-r", "5000"}, 5000},
		{[]string{"--open", "-r", "5000", "-c", "256"}, 0},
		{[]string{"-r", "5000"}, 0},
	} {
		cmd := newURLCmd(session.Process{})
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		f := cmd.Flags()
		open, _ := f.GetBool("open")
		rate, _ := f.GetFloat64("rate")
		if got := openBound(f.Changed("connections"), open, rate); got != c.want {
			t.Errorf("%v: derived bound %d, want %d (0: -c as given)", c.args, got, c.want)
		}
	}
}
