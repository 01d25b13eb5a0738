package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sched"
)

// build assembles the result from what was recorded so far.
func (r *runner) build(checkpoint bool) *result.Result {
	return r.buildFrom(r.rec.Snapshot(), checkpoint)
}

// buildCheckpoint is a checkpoint's result: its series end with the
// interval still open, so they add up to its totals (a kill -9 leaves a
// file whose every figure agrees with every other).
func (r *runner) buildCheckpoint() *result.Result {
	target := func(atS float64) float64 { return r.segTarget(time.Duration(atS * float64(time.Second))) }
	return r.buildFrom(r.rec.SnapshotOpen(target), true)
}

func (r *runner) buildFrom(snap metrics.Snapshot, checkpoint bool) *result.Result {
	now := time.Now()
	stopped, partial, why := r.outcome()
	measuredEnd := stopped
	if measuredEnd.IsZero() || checkpoint {
		measuredEnd = now
	}
	// Over the time the load ran: a late start's missed part sent nothing.
	dur := max(measuredEnd.Sub(r.start.Add(r.late)), 0).Seconds()
	seed := r.prog.Seed
	res := &result.Result{
		Schema: result.Schema,
		Tool:   result.Tool{Name: "stampede", Version: r.opts.Version},
		Plan:   PlanInfo(r.plan, r.base),
		Run: result.RunInfo{
			Started: r.start, Ended: now, DurationS: dur,
			Model: r.plan.Load.Model.String(), Paced: r.plan.Load.Pace > 0,
			Segment: r.resultSegment(),
			Partial: partial != "", PartialReason: partial, StopReason: why,
			Seed: &seed, Engine: r.engineName(),
			LateStartS: float64(r.late.Milliseconds()) / 1000,
		},
		Totals:     snap.Totals,
		Steps:      snap.Steps,
		Series:     snap.Series,
		Samples:    snap.Errors,
		ErrorsTop:  snap.ErrorsTop,
		Thresholds: []result.Threshold{},
		Indicators: []result.Indicator{},
	}
	if checkpoint && partial == "" {
		res.Run.Partial = true
		res.Run.PartialReason = fmt.Sprintf("run still in progress (checkpoint at %.0fs); the process ended before the final write", dur)
	}
	if r.plan.Load.Model == plan.Open || r.plan.Load.Pace > 0 {
		res.Run.LatencyFrom = "intended"
	} else {
		res.Run.LatencyFrom = "send"
	}
	if r.plan.Load.Model == plan.Open {
		res.Run.PeakRate = sched.MaxTarget(r.plan.Load.Stages) / float64(r.seg().Count)
	} else {
		res.Run.MaxUsers = r.segMaxUsers()
	}
	cpu := (cpuTime() - r.cpu0).Seconds()
	cores := cpus() // sparep.go
	host, _ := os.Hostname()
	g := result.Generator{Lag: snap.Lag, CPUSeconds: cpu, Cores: cores, Host: host, MaxRSS: maxRSS(),
		GCPauseP99US: gcPauseP99().Microseconds()}
	if snap.Totals.Requests > 0 {
		g.CPUPerRequestUS = cpu * 1e6 / float64(snap.Totals.Requests)
	}
	if dur > 0 {
		g.CPUUtil = cpu / (dur * float64(cores))
	}
	res.Generator = g
	r.mon.into(res, r.start, checkpoint)
	r.conns.into(res)
	r.workflowInto(res) // workflow.go
	res.TLS = r.shared.TLS()
	return res
}

// PlanInfo is what a result says of its plan: every result of one plan,
// a run's or a level stopped before it measured anything, carries the
// same identity, so merges can tell the plan's segments apart from
// another plan's.
func PlanInfo(p *plan.Plan, target string) result.PlanInfo {
	sum := sha256.Sum256(p.Source)
	return result.PlanInfo{Name: p.Name, File: p.File, SHA256: hex.EncodeToString(sum[:]),
		Source: p.Redact(string(p.Source)), Target: target}
}

func gcPauseP99() time.Duration {
	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 101)
	debug.ReadGCStats(&st)
	if st.NumGC == 0 {
		return 0
	}
	return st.PauseQuantiles[99]
}
