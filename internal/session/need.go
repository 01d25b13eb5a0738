package session

import (
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
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

// levelsNeed is the disk a levels result may need: each level's as a run
// of its own (resultNeed), their sum.
func levelsNeed(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration) int64 {
	monitors := len(run.PlanMonitors(p))
	var need int64
	for _, v := range values {
		if lp, err := p.AtLevel(vary, v, ramp, hold); err == nil {
			need += resultNeed(lp, monitors)
		}
	}
	return need
}
