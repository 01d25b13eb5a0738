package levels

import (
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// Interrupted stands for a level that a Ctrl-C stopped before anything
// of it could be read back (its --workers segments left no result to
// merge, or it had not started): partial, with nothing measured, judged
// as an in-process level interrupted in its ramp is, so the levels
// before it are still saved with it and the run says it was cut off.
func Interrupted(p *plan.Plan, vary string, v float64, o Options, reason string) result.Level {
	lp, err := p.AtLevel(vary, v, o.Ramp, o.Hold)
	if err != nil {
		lp = p
	}
	res := emptyPartial(lp, reason)
	Judge(res, lp, o.SLO)
	return result.Level{Vary: vary, Value: v, RampPlannedS: o.Ramp.Seconds(), Result: res, SLO: res.Thresholds}
}
