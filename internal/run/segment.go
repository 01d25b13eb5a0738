package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stampede-load/stampede/internal/dist/segment"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sched"
)

// Segment is this run's part of a distributed test (package segment has
// the arithmetic). The zero value is the whole test.
type Segment = segment.Segment

// DefaultStartGrace is how late after Options.StartAt a segment may still
// start; a later one refuses to run (ErrLateStart).
const DefaultStartGrace = 2 * time.Second

// ErrLateStart means a segment came up after its start time plus the grace
// period. Running it would shift its share of the load against the other
// segments', so it does not run at all.
var ErrLateStart = errors.New("segment started too late")

// checkSegment refuses what a segment cannot split exactly yet.
func checkSegment(p *plan.Plan, seg Segment) error {
	seg = seg.Norm()
	if err := seg.Validate(); err != nil {
		return err
	}
	if seg.IsWhole() {
		return nil
	}
	if p.Load.Model == plan.Open && p.Load.MaxInFlight < seg.Count {
		return fmt.Errorf("segment %s: max_in_flight %d is smaller than the %d segments, so some would have no slot: raise it to at least %d",
			seg, p.Load.MaxInFlight, seg.Count, seg.Count)
	}
	return nil
}

// checkLate fails with ErrLateStart when the process comes up more than
// the grace period after o.StartAt. It is judged before the setup, so
// the message is about the process, not about how long the setup took.
func checkLate(o Options) error {
	if o.StartAt.IsZero() {
		return nil
	}
	grace := o.StartGrace
	if grace <= 0 {
		grace = DefaultStartGrace
	}
	from, what := o.StartAt, "the start time"
	if lc := o.Lifecycle; lc != nil && lc.handed.After(from) {
		// The coordinator's setup overran the start time: that is not
		// this process's lateness (the coordinator said so, and the
		// result records it as late_start_s), as a run's own setup
		// overrunning it is not. Its own is since the hand-off.
		from, what = lc.handed, "the coordinator's setup ended, after the start time"
	}
	if late := time.Since(from); late > grace {
		before := ""
		if o.Lifecycle == nil || !o.Lifecycle.given {
			before = ", before its setup"
		}
		return fmt.Errorf("%w: segment %s came up %v after %s %s (grace %v)%s; it did not run, so its share is missing rather than shifted",
			ErrLateStart, o.Segment.Norm(), late.Round(time.Millisecond), what, from.Format(time.RFC3339Nano), grace, before)
	}
	return nil
}

// waitStart waits until o.StartAt, after the setup (checkLate judged the
// process's own lateness before it), and calls ready shortly before it
// (readyLead). A setup that ends after the instant starts the load at
// once on the shared schedule: segments that run the same setup end it
// about together, so they still start together. It fails with ctx's
// error when the wait is cancelled.
func waitStart(ctx context.Context, o Options, ready func()) error {
	if o.StartAt.IsZero() {
		return nil
	}
	if time.Until(o.StartAt) < readyLead {
		// Too close or past: what ready does before the start is done
		// at it instead, on the run's clock (an open model's first
		// arrivals dial for themselves).
		return sleepCtx(ctx, time.Until(o.StartAt), o)
	}
	if err := sleepCtx(ctx, time.Until(o.StartAt)-readyLead, o); err != nil {
		return err
	}
	ready()
	return sleepCtx(ctx, time.Until(o.StartAt), o)
}

// readyLead is how long before a start time a segment gets ready: an
// open model's pre-opened connections take up to 100 ms, and near the
// start a server has no time to close them for idling.
const readyLead = 250 * time.Millisecond

// sleepCtx waits d, or fails when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration, o Options) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cancelled while waiting for the start time %s: %w", o.StartAt.Format(time.RFC3339), ctx.Err())
	}
}

func (r *runner) seg() Segment { return r.opts.Segment.Norm() }

// segShare is this segment's part of a fixed count of slots (Share).
func (r *runner) segShare(v int) int { return r.seg().ShareInt(v) }

// userID maps the local-th user this process starts to its id in the whole
// test, which decides its scenario and tenant. Closed-model users are
// striped (segment.UserID); the open model's workers are its Share of the
// max_in_flight slots (segment.SlotID). One process numbers them 1, 2, 3, …
// either way.
func (r *runner) userID(local int64) int64 {
	s := r.seg()
	if s.IsWhole() {
		return local
	}
	if r.plan.Load.Model == plan.Open {
		return s.SlotID(local, int64(r.plan.Load.MaxInFlight))
	}
	return s.UserID(local)
}

func (r *runner) resultSegment() result.Segment {
	s := r.seg()
	return result.Segment{Index: s.Index, Count: s.Count}
}

// segUsersAt is this segment's part of the users the profile runs at t:
// its stripe, which never falls while the whole's users rise, so a ramp up
// never retires a user of this segment to start another (package segment).
func (r *runner) segUsersAt(stages []plan.Stage, t time.Duration) int {
	return int(r.seg().Stripe(int64(sched.UsersAt(stages, t))))
}

// segMaxUsers is the result's max_users: the users this segment runs when
// the whole test peaks. merge adds the segments' figures, and at one
// instant the segments' stripes sum exactly to the whole's users. With
// waves each wave is rounded and striped on its own, so the peak is where
// the waves' rounded users sum highest (segment.Waves.PeakTime), for one
// process and for segments alike.
//
// Every checkpoint's result asks for it, and finding the waves' peak scans
// the whole profile, so it is computed once per run.
func (r *runner) segMaxUsers() int {
	r.segPeakOnce.Do(func() {
		if len(r.plan.Waves) > 0 && r.prog.HasRequests() {
			r.segPeak = r.waveUsersAt(segment.NewWaves(r.plan).PeakTime())
			return
		}
		r.segPeak = int(r.seg().Stripe(segment.PeakUsers(r.plan.Load.Stages)))
	})
	return r.segPeak
}

// segTarget is this segment's part of the profile's target at t, for the
// series (merging the segments' series then sums to the whole's target).
func (r *runner) segTarget(t time.Duration) float64 {
	if r.plan.Load.Model == plan.Open {
		return sched.TargetAt(r.plan.Load.Stages, t) / float64(r.seg().Count)
	}
	if len(r.plan.Waves) > 0 && r.prog.HasRequests() {
		// The sum of each wave's part, as runWaves keeps them; the stripe
		// of the waves' sum can differ by a user per wave.
		return float64(r.waveUsersAt(t))
	}
	return float64(r.segUsersAt(r.plan.Load.Stages, t))
}

// segmentConnCap is a segment's part of a per-host connection cap; a cap
// stays a cap (at least 1) however many segments share it.
func segmentConnCap(c int, seg Segment) int {
	if c <= 0 {
		return c
	}
	return max(1, seg.Norm().ShareInt(c))
}
