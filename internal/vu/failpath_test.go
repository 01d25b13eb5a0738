package vu

import (
	"testing"
	"time"
)

// After a failed step the user waits the think of the path the iteration
// would have taken, not every think step of the scenario: the longer of
// if and else, choose's branches by weight, a repeat's body times its
// count, and the passes left of the loop the failure happened in.
func TestFailedStepThinksItsPath(t *testing.T) {
	base, seen := failingServer(t)
	for _, tc := range []struct {
		name, steps string
		want        time.Duration
		sent        int64
	}{
		{"branches and loops after the failure", `
      - get: /fail
      - if: iter < 0
        steps: [{think: 1s}]
        else: [{think: 3s}]
      - choose:
          - {weight: 3, steps: [{think: 1s}]}
          - {weight: 1, steps: [{think: 5s}]}
      - repeat: 4
        steps: [{think: 1s}, {get: /ok}]
      - think: 1s
`, 3*time.Second + 2*time.Second + 4*time.Second + time.Second, 1},
		{"failure inside a loop", `
      - repeat: 5
        steps:
          - get: /ok
          - get: /fail
          - if: iter >= 0
            steps: [{think: 1s}]
      - think: 2s
`, 5*time.Second + 2*time.Second, 2},
		{"failure in a branch", `
      - choose:
          - steps: [{get: /fail}, {think: 1s}]
      - repeat: 2
        steps:
          - repeat: 3
            steps: [{think: 1s}, {get: /ok}]
`, time.Second + 6*time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := seen.Load()
			u, sc := userFor(t, "target: "+base+"\nscenarios:\n  s:\n    steps:"+tc.steps+"load: {stages: [{duration: 1s, users: 1}]}\n", base)
			if err := u.Begin(sc, time.Time{}); err != nil {
				t.Fatal(err)
			}
			next, think, end := u.Segment(sc, 0)
			if end || think != tc.want || next != len(sc.Steps) {
				t.Fatalf("Segment after the failed step = (%d, %v, %v), want (%d, %v, false)", next, think, end, len(sc.Steps), tc.want)
			}
			u.End()
			if n := seen.Load() - before; n != tc.sent {
				t.Errorf("server saw %d requests, want %d", n, tc.sent)
			}
		})
	}
}
