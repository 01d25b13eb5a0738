package report

import "testing"

func TestDuration(t *testing.T) {
	cases := []struct {
		us   int64
		want string
	}{
		{3265, "3.265ms"},                     // seed Min: exact milliseconds
		{818663, "818.663ms"},                 // seed P50 under a second keeps every digit
		{60000, "60ms"},                       // trailing zeros trimmed
		{62300, "62.3ms"},                     // seed V2 P50
		{697, "697µs"},                        // seed Min below a millisecond
		{659, "659µs"},                        // seed V2 Min
		{4718320, "4.718s"},                   // seed P95 4.71832s, rounded to the millisecond
		{1655765, "1.656s"},                   // rounds half up
		{22116377, "22.116s"},                 // seed P50 at 25k users
		{999999, "999.999ms"},                 // just under a second is not rounded
		{1000000, "1s"},                       // exactly a second
		{74000000, "1m14s"},                   // over a minute prints like Go
		{61500000, "1m1.5s"},                  // Go's own form for fractional minutes
		{3_600_000_000, "1h0m0s"},             // the histogram's ceiling
		{0, "0s"},                             // empty histogram figures
		{1, "1µs"},                            // the histogram's floor
		{-1500, "-1.5ms"},                     // negative values do not panic
		{1 << 62, "2562047h47m16.854775807s"}, // clamps instead of wrapping; too big to round
	}
	for _, c := range cases {
		if got := Duration(c.us); got != c.want {
			t.Errorf("Duration(%d) = %q, want %q", c.us, got, c.want)
		}
	}
}

func TestRunDuration(t *testing.T) {
	cases := []struct {
		s    float64
		want string
	}{
		{30.06, "30s"},  // seed 100 users
		{30.6, "31s"},   // rounds to the nearest second
		{60.2, "1m0s"},  // seed V2 10000 users
		{61.4, "1m1s"},  // seed 50k users
		{74.4, "1m14s"}, // seed 100k users
		{0, "0s"},       // a run that never started
		{-3, "0s"},      // clock trouble does not print a negative run
	}
	for _, c := range cases {
		if got := runDuration(c.s); got != c.want {
			t.Errorf("runDuration(%v) = %q, want %q", c.s, got, c.want)
		}
	}
}
