package run

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/vu"
)

// A closed plan of 3 tenants × 3 users (1 of scenario a, 2 of b) ramping
// up and holding, split 3 ways. Every user sends one request and then
// thinks for longer than the run, so what the target sees is the set of
// users that ever started. Users are striped, so on the ramp no segment
// retires a user to start another (with Share, segment 1/3 would run 1,
// 0, 1 users at 1, 2, 3 and start a replacement with an id past the
// peak): the segments must run exactly the users — ids, tenants and
// scenarios — that one process runs, and report max_users that add up.
func TestClosedRampSplitIntoSegmentsRunsTheSameUsers(t *testing.T) {
	srv, take := waveServer(t)
	p := oneRequestPerUserPlan(t, srv.URL, "{count: 3}",
		"    - {duration: 600ms, users: 0 -> 1}\n    - {duration: 1s, users: 1}\n")
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	one := take()
	if len(one) != 9 || res.Run.MaxUsers != 9 {
		t.Fatalf("one process: the target saw %d users, max_users %d; want 9 (3 tenants × 3): %v", len(one), res.Run.MaxUsers, one)
	}
	ids := map[string]bool{}
	for _, v := range one {
		if ids[v.vu] {
			t.Fatalf("one process: user %s sent twice: %v", v.vu, one)
		}
		ids[v.vu] = true
	}

	const n = 3
	segs := runSegments(t, p, n)
	maxUsers := make([]int, n)
	for i, r := range segs {
		maxUsers[i] = r.Run.MaxUsers
	}
	split := take()
	if fmt.Sprint(split) != fmt.Sprint(one) {
		t.Errorf("%d segments ran other users than one process:\nsegments %v\none      %v", n, split, one)
	}
	// Each segment runs its stripe of the 9 users at the peak: 3 each.
	for i, m := range maxUsers {
		if m != 3 {
			t.Errorf("segment %d/%d: max_users %d, want 3 (its stripe of 9)", i, n, m)
		}
	}
}

// max_users of the segments must add up to one process's, since merge adds
// them: without waves each reports its stripe of the peak; with waves
// (striped wave by wave, and a stripe of a sum is not the sum of stripes)
// its users at the instant the whole peaks.
func TestSegmentMaxUsersAddUp(t *testing.T) {
	plans := map[string]string{
		"ramp down and up": `
scenarios:
  s: {steps: [{get: /}]}
load:
  stages:
    - {duration: 1s, users: 0 -> 7}
    - {duration: 1s, users: 7 -> 2}
    - {duration: 1s, users: 2 -> 11}
    - {duration: 1s, users: 4}
`,
		"waves": `
tenants: {count: 7, waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 700ms}]}
scenarios:
  a: {per_tenant: 1, steps: [{get: /a}]}
  b: {per_tenant: 2, steps: [{get: /b}]}
load:
  stages:
    - {duration: 1s, users: 0 -> 1}
    - {duration: 1s, users: 1}
`,
		// Each wave holds 3.5 users, rounded on its own to 4: one process
		// runs 8 in the hold, not the 7 of the summed profile.
		"waves, fractional": `
tenants: {count: 4, waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 300ms}]}
scenarios:
  s: {steps: [{get: /}]}
load:
  stages:
    - {duration: 1s, users: 0 -> 7}
    - {duration: 1s, users: 7}
`,
	}
	for name, src := range plans {
		p := mustPlan(t, "target: http://127.0.0.1:1\n"+src)
		prog, err := vu.Compile(p, p.Target, "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		maxUsers := func(s Segment) int {
			r := &runner{plan: p, prog: prog, opts: Options{Segment: s}}
			return r.segMaxUsers()
		}
		whole := maxUsers(Segment{})
		want := int(segment.PeakUsers(p.Load.Stages))
		if len(p.Waves) > 0 {
			// What runWaves keeps: each wave's users rounded on its own,
			// summed, at the busiest millisecond.
			want = 0
			for at := time.Duration(0); at < p.Load.Duration(); at += time.Millisecond {
				n := 0
				for _, w := range p.Waves {
					n += segment.WaveUsersAt(w, at)
				}
				want = max(want, n)
			}
		}
		if whole != want {
			t.Errorf("%s: one process reports max_users %d, want the users it runs at the peak, %d", name, whole, want)
		}
		for n := 2; n <= 5; n++ {
			sum := 0
			for i := 0; i < n; i++ {
				sum += maxUsers(Segment{Index: i, Count: n})
			}
			if sum != whole {
				t.Errorf("%s split %d ways: max_users add up to %d, one process %d", name, n, sum, whole)
			}
		}
	}
}

// waitStart returns at the start time, never before it, whether or not
// there was time to get ready first; ready runs once, before the start
// time, only when there was (readyLead). Before, a start time closer
// than readyLead returned at once, and only a monitor's own wait kept
// the load from starting early. Lower bounds only: a slow machine
// returns later, never sooner.
func TestWaitStartNeverReturnsEarly(t *testing.T) {
	for _, lead := range []time.Duration{readyLead / 2, readyLead + 200*time.Millisecond} {
		start := time.Now().Add(lead)
		readies := 0
		var readyAt time.Time
		err := waitStart(context.Background(), Options{StartAt: start}, func() { readies++; readyAt = time.Now() })
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(start) {
			t.Errorf("lead %v: returned %v before the start time", lead, start.Sub(now))
		}
		want := 0
		if lead > readyLead {
			want = 1
		}
		if readies != want || want == 1 && !readyAt.Before(start) {
			t.Errorf("lead %v: ready ran %d times (at %v before the start), want %d before it", lead, readies, start.Sub(readyAt), want)
		}
	}
}
