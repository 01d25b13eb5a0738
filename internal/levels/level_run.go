package levels

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// runLevel runs the level's ramp and then its measured hold, in one run.
func runLevel(ctx context.Context, p *plan.Plan, vary string, v float64, i, n int, o Options) (result.Level, error) {
	lv := result.Level{Vary: vary, Value: v, RampPlannedS: o.Ramp.Seconds()}
	wait := o.rampWait()
	// The profile holds long enough for the slowest allowed ramp and the
	// hold after it; the level ends the run itself a hold after the cut.
	lp, err := p.AtLevel(vary, v, o.Ramp, wait-o.Ramp+o.Hold)
	if err != nil {
		return lv, err
	}
	lr := newLevelRun(o, vary, v, i, n)
	defer close(lr.finished)
	if o.Ramp > 0 {
		lr.event("ramp", o.Ramp)
	}
	ro := lr.runOptions()
	if o.Level != nil {
		o.Level(vary, v, lr.handle)
	}
	go lr.cutWhenOverrun(wait)
	res, err := run.Run(ctx, lp, ro)
	if err != nil {
		return lv, err
	}
	res, err = lr.window(&lv, lp, res)
	if err != nil {
		return lv, err
	}
	return o.verdict(lv, lp, res), nil
}

// levelRun is one level's run in flight. The ramp and the hold are one
// run, so users and connections carry on from the ramp into the level as
// they would in production. The level is measured from a snapshot taken
// when its population is in place (all users started, every connection
// open or failed), or at the latest when the ramp has overrun by as long
// again; the ramp is cut off the figures afterwards (Since).
type levelRun struct {
	o        Options
	vary     string
	value    float64
	index    int
	count    int
	handle   *run.Handle
	end      chan struct{} // closed as the hold ends: the run stops
	finished chan struct{} // closed as runLevel returns: watchers stop

	mu      sync.Mutex
	cut     *result.Result // the snapshot the hold is measured from
	inPlace bool           // whether the population was in place at cut
	// last is the run as the hold ended: requests still queued then
	// finish in the grace period after it, and counting them would lift
	// the level's rate above what the target served in the hold.
	last *result.Result
}

func newLevelRun(o Options, vary string, v float64, i, n int) *levelRun {
	return &levelRun{
		o: o, vary: vary, value: v, index: i, count: n,
		handle:   &run.Handle{},
		end:      make(chan struct{}),
		finished: make(chan struct{}),
	}
}

// event tells the caller a phase of the level starts.
func (lr *levelRun) event(phase string, d time.Duration) {
	if lr.o.Event != nil {
		lr.o.Event(Event{Vary: lr.vary, Value: lr.value, Phase: phase, Duration: d, Index: lr.index, Count: lr.count})
	}
}

// runOptions is the caller's run options with the level's own end, cut
// and handle, and progress shown against the level's length.
func (lr *levelRun) runOptions() run.Options {
	ro := lr.o.Run
	if show := lr.o.Run.Progress; show != nil {
		ro.Progress = lr.progress(show)
	}
	ro.End = lr.end
	ro.Planned = lr.o.Ramp + lr.o.Hold
	ro.InPlace = func(s *result.Result) { lr.startHold(s, true) }
	ro.Handle = lr.handle
	return ro
}

// progress shows the level's length, not the run's: the run's own
// profile holds past any overrun the ramp may take, while the level lasts
// its ramp and then its hold from the cut.
func (lr *levelRun) progress(show func(run.Progress)) func(run.Progress) {
	return func(pr run.Progress) {
		lr.mu.Lock()
		c := lr.cut
		lr.mu.Unlock()
		pr.Total = lr.o.Ramp + lr.o.Hold
		if c != nil {
			pr.Total = time.Duration(c.Run.DurationS*float64(time.Second)) + lr.o.Hold
		}
		show(pr)
	}
}

// startHold takes s as the start of the measured hold, once: the first
// of the population in place and the ramp overrun wins.
func (lr *levelRun) startHold(s *result.Result, settled bool) {
	lr.mu.Lock()
	if lr.cut != nil {
		lr.mu.Unlock()
		return
	}
	lr.cut, lr.inPlace = s, settled
	lr.mu.Unlock()
	lr.event("hold", lr.o.Hold)
	// The hold counts from the snapshot's instant: building it (and a
	// busy machine) may have taken a while since.
	go lr.endHoldAfter(lr.o.Hold - time.Since(s.Run.Ended))
}

// endHoldAfter snapshots the run as the hold ends and ends the run.
func (lr *levelRun) endHoldAfter(left time.Duration) {
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C:
		if e := lr.handle.Snapshot(""); e != nil {
			lr.mu.Lock()
			lr.last = e
			lr.mu.Unlock()
		}
		close(lr.end)
	case <-lr.finished:
	}
}

// cutWhenOverrun starts the hold wait after the run started, with the
// population in place or not, unless it started already.
func (lr *levelRun) cutWhenOverrun(wait time.Duration) {
	select {
	case <-lr.handle.Started():
	case <-lr.finished:
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		lr.startHold(lr.handle.Snapshot(""), false)
	case <-lr.finished:
	}
}

// window is the level's measured part of the finished run res: from the
// cut to the end of the hold. It sets lv's ramp figures, and why the
// population was not in place when it was not.
func (lr *levelRun) window(lv *result.Level, lp *plan.Plan, res *result.Result) (*result.Result, error) {
	lr.mu.Lock()
	before, settled, atEnd := lr.cut, lr.inPlace, lr.last
	lr.mu.Unlock()
	// No measured part: the run ended (or was stopped) before the cut, or
	// as it was taken. A cut snapshotted as a stop lands reads the clock
	// after the stopped run's end.
	unmeasured := before == nil || before.Run.DurationS >= res.Run.DurationS
	switch {
	case unmeasured && res.Run.Partial:
		// Interrupted during the ramp: nothing of the level was measured.
		return sameRun(emptyPartial(lp, res.Run.PartialReason), res), nil
	case unmeasured:
		// The run ended before its population was in place: there is no
		// measured part, and no figure of the level to show.
		lv.NotInPlace = endedBeforeInPlace(res.Run.DurationS)
		return notMeasured(lp, res, lv.NotInPlace), nil
	}
	lv.RampS = before.Run.DurationS
	if !settled {
		lv.NotInPlace = measuredWithoutAll(lv.RampS, lr.o.Ramp)
	}
	lv.RampOverran = !settled || lv.RampS > (lr.o.Ramp+overranBy(lr.o.Ramp)).Seconds()
	// The sessions of the connections the level held to its end are
	// recorded as its stop closes them, after atEnd: they come from res.
	steady, err := Since(sessionsToEnd(endOfHold(res, atEnd), res), before)
	if err != nil {
		return nil, fmt.Errorf("level %s: cutting off the ramp: %w", FormatLevel(lr.vary, lr.value), err)
	}
	return steady, nil
}

func endedBeforeInPlace(ranS float64) string {
	return fmt.Sprintf("the run ended before the population was in place (%s after the start)", fmtS(ranS))
}

func measuredWithoutAll(rampS float64, planned time.Duration) string {
	return fmt.Sprintf("the population was not in place %s after the level started (ramp planned %s), so the level was measured without all of it", fmtS(rampS), fmtS(planned.Seconds()))
}

// verdict judges the level's measured result res: its criteria, its
// indicators, whether lag makes it suspect, and its pass.
func (o Options) verdict(lv result.Level, lp *plan.Plan, res *result.Result) result.Level {
	Judge(res, lp, o.SLO)
	if in, ok := rampIndicator(lv); ok {
		res.Indicators = append(res.Indicators, in)
	}
	if why, ok := gate.LagSuspect(res, res.Totals.LatencyOK.P95US); ok {
		lv.Suspect = why
	}
	lv.Result = res
	lv.SLO = res.Thresholds
	// A level whose population never got in place failed, like one whose
	// SLOs failed.
	lv.Pass = o.judge(lv)
	return lv
}
