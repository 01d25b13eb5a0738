package session

import (
	"math"
	"testing"
)

// url --open's bound derived from the rate is a default: under a low
// open-files limit it is lowered to what fits (after the 256 files kept
// back), where the bound a plan writes is refused.
func TestFitOpenBoundLowersToTheLimit(t *testing.T) {
	for _, c := range []struct {
		bound int
		limit uint64
		want  int
	}{
		{10000, 20000, 10000}, {10000, 4096, 3840}, {64, 4096, 64}, {3840, 4096, 3840},
		{3841, 4096, 3840}, {100, 200, 1}, {5000, math.MaxUint64, 5000},
	} {
		if got := fitOpenBound(c.bound, c.limit); got != c.want {
			t.Errorf("fitOpenBound(%d, %d) = %d, want %d", c.bound, c.limit, got, c.want)
		}
	}
}
