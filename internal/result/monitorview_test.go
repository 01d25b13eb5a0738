package result

import "testing"

func TestFormatMonitorValue(t *testing.T) {
	cases := []struct {
		unit string
		v    float64
		want string
	}{
		{"bytes", 512, "512 B"},
		{"bytes", 3 << 20, "3.0 MiB"},
		{"bytes/s", 1536, "1.5 KiB/s"},
		{"pct", 87.46, "87.5%"},
		{"ratio", 0.99312, "0.993"},
		{"s", 3.2, "3.20s"},
		{"s", -0.0004, "0.00s"}, // a clock speck below zero is not "-0.00s"
		{"1/s", 1204, "1204/s"},
		{"count", 12, "12"},
		{"count", 11.9, "11.9"},
		{"", 0.5, "0.50"},
		{"", -2.5, "-2.50"},
	}
	for _, c := range cases {
		if got := FormatMonitorValue(c.unit, c.v); got != c.want {
			t.Errorf("FormatMonitorValue(%q, %v) = %q, want %q", c.unit, c.v, got, c.want)
		}
	}
}

func TestSteadyWindowEdges(t *testing.T) {
	// No series at all (a merged or old result): the whole run.
	r := &Result{Run: RunInfo{DurationS: 12}}
	if from, to := r.SteadyWindow(); from != 0 || to != 12 {
		t.Errorf("no series: %v..%v, want 0..12", from, to)
	}
	// Ramp up, hold, ramp down: the hold only, ending where the last
	// interval at the peak ends.
	r.Series = Series{IntervalS: 1, T: []float64{0, 1, 2, 3, 4, 5, 6, 7}, Target: []float64{1, 2, 4, 4, 4, 4, 2, 1}}
	r.Run.DurationS = 8
	if from, to := r.SteadyWindow(); from != 2 || to != 6 {
		t.Errorf("hold in the middle: %v..%v, want 2..6", from, to)
	}
}
