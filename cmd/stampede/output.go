package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// Result size estimate, per part, from results stampede writes: a step's
// four HDR histograms (ok and all, figures and base64) stay well under
// this, an interval of the series (sixteen columns, indented JSON) is a
// few hundred bytes, a monitor's sample a few hundred more. The figures
// are generous on purpose: they size a reservation, not a forecast.
const (
	resultBase        = 256 << 10
	resultPerStep     = 48 << 10
	resultPerInterval = 2 << 10
	resultPerMonitor  = 2 << 10 // per monitor, per interval
	resultFloor       = 1 << 20
)

// resultNeed is the disk a run's result may need: its steps, and its
// intervals (stages, waves' offsets and the grace period, at one per
// second) times the series and monitors recorded in each.
func resultNeed(p *plan.Plan, monitors int) int64 {
	steps := 0
	for _, sc := range p.Scenarios {
		steps += len(sc.Steps)
		if sc.Connection != nil {
			steps += 16 // negotiate, handshake, invoke and push names
		}
	}
	d := p.Load.Duration()
	for _, w := range p.Waves {
		d = max(d, w.Offset+w.Duration())
	}
	d += p.Load.Grace + 10*time.Second
	intervals := int64(d/time.Second) + 1
	need := resultBase + 2*int64(len(p.Source)) + int64(steps)*resultPerStep +
		intervals*(resultPerInterval+int64(monitors+1)*resultPerMonitor)
	return max(need, resultFloor)
}

// openOutput sets aside the result file's open files and disk space before
// any load, and refuses (exit 3) when the disk has too little free.
func openOutput(out string, need int64) (*result.Output, error) {
	o, err := result.Open(out, need)
	var se *result.SpaceError
	switch {
	case errors.As(err, &se):
		return nil, fail(exitRun, fmt.Errorf("%v\nNothing was sent.", err))
	case err != nil:
		return nil, fail(exitUsage, fmt.Errorf("cannot write the result next to %s: %v", out, err))
	}
	return o, nil
}

// lostResult is the error of a final write that failed: it says where the
// last good checkpoint is, if one was written.
func lostResult(o *result.Output, err error) error {
	at, partial, ok := o.Saved()
	if !ok {
		return fmt.Errorf("the result could not be saved to %s: %v\nNo checkpoint was written either: nothing measured was saved", o.Path(), err)
	}
	what := "result"
	if partial {
		what = "partial result"
	}
	return fmt.Errorf("the result could not be saved to %s: %v\nThe last good checkpoint, a %s written at %s, is still in %s",
		o.Path(), err, what, at.Format("15:04:05"), o.Path())
}
