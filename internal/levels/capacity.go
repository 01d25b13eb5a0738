package levels

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// CapacityOptions bound a capacity search.
type CapacityOptions struct {
	Options
	// Start is the first rate tried (default 10/s); Max the highest
	// (default 1,000,000/s).
	Start, Max float64
	// Factor multiplies the rate while every level passes (default 2).
	Factor float64
	// Precision ends the bisection when the gap between the best passing
	// and the lowest failing rate is this share of the latter (default 5%).
	Precision float64
	// Budget bounds the search's wall time (default 5m); a level is only
	// started when it can finish within it.
	Budget time.Duration
	// Found, when set, hears the search's answer before the plan's
	// teardown runs, as Options.LoadOver does for gates and sweeps.
	Found func(*Capacity)
}

// Capacity is a finished search.
type Capacity struct {
	// Rate is the highest rate that met the SLOs (0: none did).
	Rate float64
	// FailedAt is the lowest rate that missed them (0: none did up to Max).
	FailedAt float64
	// Knee is where achieved throughput stopped following the offered
	// rate or latency rose toward a latency SLO (see FindKnee); KneeFound
	// says whether the levels show one.
	Knee      Knee
	KneeFound bool
	// Little is the closed-model equivalent at Rate.
	Little Little
	// Stopped says why the search ended.
	Stopped string
	// Undetermined, when set, says why Rate is no answer about the
	// target: a level that bounds it (the best pass or the lowest
	// failure) is suspect or was held back by the generator, so the
	// limit found may be the generator's.
	Undetermined string
	// CannotSplit says why --workers cannot split the plan's levels
	// (SplitRefusal), so an undetermined capacity is not told to split.
	CannotSplit string
	// BoundBy names the server resource the monitors showed at its limit
	// at the lowest failing rate (the server_limit indicator), when they
	// showed one.
	BoundBy string
	// Result covers the whole search; Result.Levels holds every level in
	// the order it ran.
	Result *result.Result
}

// Knee describes the first level (by rate) where the target stopped
// keeping up, against the last one where it did.
type Knee struct {
	FollowedUpTo  float64 // offered rate of the last level that kept up
	AtRate        float64 // offered rate of the first that did not
	AchievedRPS   float64 // successful iterations/s achieved there
	P95BeforeUS   int64
	P95AtUS       int64
	Reason        string
	FollowedRatio float64 // achieved / offered at AtRate
}

// Little is Little's law at the capacity level: work in the system equals
// throughput times time in the system, which is how many closed-model
// users the same throughput needs (Little's law: users = RPS × latency).
type Little struct {
	RPS          float64 // requests/s, successful
	AvgLatencyUS float64 // mean latency of successful requests
	BusyUsers    float64 // RPS × latency: users waiting on a response at any moment
	// IterationsPerS × IterationS (requests' latencies plus think time) is
	// the number of closed-model users that reproduce this load.
	IterationsPerS float64
	IterationS     float64
	ClosedUsers    float64
}

const (
	followedBelow = 0.9 // achieved/offered under which throughput stopped following
	latencyKnee   = 2.0 // p95 over the lowest level's by this much
	// kneeSLOShare: a latency knee also needs p95 at this share of the
	// tightest latency SLO's bound. A doubling alone is no knee when the
	// baseline is a few milliseconds: scheduling noise on a busy generator
	// host (or a loaded CI machine) doubles or triples a 2ms loopback p95
	// at a rate the target serves easily, and a knee is meant to mark
	// where the target stopped keeping up. Half the latency the user
	// allows is a rise that matters by the user's own measure.
	kneeSLOShare = 0.5
)

// SearchCapacity finds the highest open-model arrival rate (iterations/s)
// at which p meets the SLOs: it steps the rate up geometrically until a
// level fails, then bisects between the best pass and the first failure,
// within the budget. Every level runs as an open model whatever p's model.
func SearchCapacity(ctx context.Context, p *plan.Plan, o CapacityOptions) (*Capacity, error) {
	if o.Start <= 0 {
		o.Start = 10
	}
	if o.Max <= 0 {
		o.Max = 1_000_000
	}
	if o.Factor <= 1 {
		o.Factor = 2
	}
	if o.Precision <= 0 {
		o.Precision = 0.05
	}
	if o.Budget <= 0 {
		o.Budget = 5 * time.Minute
	}
	if o.Hold <= 0 {
		o.Hold = 10 * time.Second
	}
	if len(Criteria(p, o.SLO)) == 0 {
		return nil, fmt.Errorf("capacity needs at least one SLO, such as --slo \"p95 < 500ms\"")
	}
	if o.Start > o.Max {
		return nil, fmt.Errorf("--start %g is above --max %g", o.Start, o.Max)
	}
	if _, err := p.AtLevel(plan.VaryRate, o.Start, o.Ramp, o.Hold); err != nil {
		return nil, err
	}
	o.carry()
	c, err := searchCapacity(ctx, p, o)
	var res *result.Result
	if c != nil {
		res = c.Result
	}
	if o.Found != nil && p.Teardown != nil && res != nil {
		o.Found(c) // before the teardown, as Options.LoadOver
	}
	tearDown(p, o.Options, res)
	return c, err
}

// LevelCost is the time the search allows one level: its ramp, its hold
// and up to the grace period for requests still in flight. A budget
// shorter than that runs no level at all.
func LevelCost(p *plan.Plan, ramp, hold time.Duration) time.Duration {
	return ramp + hold + p.Load.Grace
}

// minJudgedArrivals is the fewest arrivals a level's hold must offer for
// the search to go lower when no rate has met the SLOs yet.
const minJudgedArrivals = 10

func searchCapacity(ctx context.Context, p *plan.Plan, o CapacityOptions) (*Capacity, error) {
	began := time.Now()
	cost := LevelCost(p, o.Ramp, o.Hold)
	c := &Capacity{CannotSplit: SplitRefusal(p)}
	var levels []result.Level
	try := func(rate float64) (bool, bool, error) {
		if time.Since(began)+cost > o.Budget {
			c.Stopped = fmt.Sprintf("budget of %v spent", o.Budget)
			return false, false, nil
		}
		lv, err := o.level(ctx, p, plan.VaryRate, rate, len(levels), 0)
		if err != nil {
			return false, false, err
		}
		levels = append(levels, lv)
		if o.Done != nil {
			o.Done(lv)
		}
		if lv.Result.Run.Partial {
			c.Stopped = "interrupted"
			return false, false, nil
		}
		return lv.Pass, true, nil
	}
	var err error
	rate := o.Start
	for {
		pass, ran, e := try(rate)
		if err = e; e != nil || !ran {
			break
		}
		if !pass {
			c.FailedAt = rate
			break
		}
		c.Rate = rate
		if rate >= o.Max {
			c.Stopped = fmt.Sprintf("every rate up to --max %g/s met the SLOs", o.Max)
			break
		}
		rate = math.Min(rate*o.Factor, o.Max)
	}
	for err == nil && c.Stopped == "" && c.FailedAt > 0 && (c.FailedAt-c.Rate)/c.FailedAt > o.Precision {
		mid := (c.Rate + c.FailedAt) / 2
		if c.Rate == 0 && mid*o.Hold.Seconds() < minJudgedArrivals {
			// Nothing has passed yet: halving on toward zero would hold
			// level after level too sparse to judge until the budget ran out.
			c.Stopped = fmt.Sprintf("no rate met the SLOs, down to %g/s (a lower rate sends fewer than %d requests in a %v hold)",
				c.FailedAt, minJudgedArrivals, o.Hold)
			break
		}
		// Rates are whole arrivals per second where that loses nothing.
		if mid >= 100 {
			mid = math.Round(mid)
		}
		pass, ran, e := try(mid)
		if err = e; e != nil || !ran {
			break
		}
		if pass {
			c.Rate = mid
		} else {
			c.FailedAt = mid
		}
	}
	if c.Stopped == "" && err == nil {
		if c.Rate == 0 {
			c.Stopped = "no rate met the SLOs"
		} else {
			c.Stopped = fmt.Sprintf("bracketed within %.0f%%", o.Precision*100)
		}
	}
	c.conclude(p, levels)
	return c, err
}

// conclude draws the search's answer from the levels it ran, once its
// bracket (Rate, FailedAt) is final: the whole result, the knee, what
// bounds the answer and Little's law at it.
func (c *Capacity) conclude(p *plan.Plan, levels []result.Level) {
	if len(levels) > 0 {
		c.Result = Combine(p, levels)
	}
	c.Knee, c.KneeFound = FindKnee(levels)
	c.Undetermined, c.BoundBy = bounds(levels, c.Rate, c.FailedAt)
	for _, l := range levels {
		if l.Value == c.Rate && l.Pass {
			c.Little = LittleAt(l.Result, p)
		}
	}
}

// FindKnee looks at the levels by offered rate: the first whose achieved
// rate of successful iterations fell below 90% of the offered rate, or
// whose p95 doubled over the lowest level's and reached half the tightest
// latency SLO (such as "p95 < 500ms") the levels were judged by, is the
// knee. Without a latency SLO, latency alone never marks the knee: a
// doubling of a millisecond-scale p95 is as often the generator host's
// scheduling noise as the target queueing, and with no bound given there
// is nothing to tell a rise that matters from one that does not.
//
// Only judged levels count: complete, measured, and not suspect. A level
// whose generator lagged says more about the generator than the target,
// so it is never the knee, the level before it, nor the lowest level whose
// p95 a rise is measured from.
func FindKnee(levels []result.Level) (Knee, bool) {
	var ls []result.Level
	for _, l := range levels {
		if kneeJudges(l) {
			ls = append(ls, l)
		}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Value < ls[j].Value })
	if len(ls) == 0 {
		return Knee{}, false
	}
	base := ls[0].Result.Totals.LatencyOK.P95US
	// The p95 a latency knee must reach: double the lowest level's, and
	// half the tightest latency bound; none without such a bound.
	var kneeP95 float64
	if bound := latencyBoundUS(levels); bound > 0 && base > 0 {
		kneeP95 = math.Max(latencyKnee*float64(base), kneeSLOShare*bound)
	}
	var prev *result.Level
	for i := range ls {
		l := &ls[i]
		ach := achievedIterations(l.Result)
		ratio := ach / l.Value
		p95 := l.Result.Totals.LatencyOK.P95US
		var reason string
		switch {
		case ratio < followedBelow:
			reason = fmt.Sprintf("achieved %.1f of %g offered iterations/s (%.0f%%)", ach, l.Value, ratio*100)
		case kneeP95 > 0 && float64(p95) >= kneeP95 && prev != nil:
			reason = fmt.Sprintf("p95 rose to %s from %s at the lowest rate", result.FormatDuration(p95), result.FormatDuration(base))
		}
		if reason != "" {
			k := Knee{AtRate: l.Value, AchievedRPS: ach, P95AtUS: p95, Reason: reason, FollowedRatio: ratio}
			if prev != nil {
				k.FollowedUpTo = prev.Value
				k.P95BeforeUS = prev.Result.Totals.LatencyOK.P95US
			}
			return k, true
		}
		prev = l
	}
	return Knee{FollowedUpTo: prev.Value, P95BeforeUS: prev.Result.Totals.LatencyOK.P95US}, false
}

// kneeJudges reports whether the knee may be drawn from a level: it ran in
// full, measured something, and is not suspect.
func kneeJudges(l result.Level) bool {
	return l.Result != nil && l.Result.Run.DurationS > 0 && !l.Result.Run.Partial && l.Suspect == ""
}

// suspectBetween is the offered rates, in order, of the complete levels
// over lo and under hi that the knee left out as suspect.
func suspectBetween(levels []result.Level, lo, hi float64) []string {
	var vs []float64
	for _, l := range levels {
		if l.Suspect != "" && l.Value > lo && l.Value < hi && l.Result != nil && !l.Result.Run.Partial {
			vs = append(vs, l.Value)
		}
	}
	sort.Float64s(vs)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = compact(v) + "/s"
	}
	return out
}

// latencyBoundUS is the tightest upper bound, in microseconds, that the
// levels' SLOs put on a latency ("p95 < 500ms", "p99 <= 1s", "avg <
// 200ms", for the whole run or one step); 0 when none does.
func latencyBoundUS(levels []result.Level) float64 {
	var bound float64
	for _, l := range levels {
		for _, s := range l.SLO {
			th, err := gate.Parse(s.Expr)
			if err != nil || th.Kind != gate.Duration || (th.Op != "<" && th.Op != "<=") || th.Value <= 0 {
				continue
			}
			if bound == 0 || th.Value < bound {
				bound = th.Value
			}
		}
	}
	return bound
}

// achievedIterations counts iterations whose first request succeeded, per
// second: arrivals the target actually served, which is what the offered
// rate is compared with. Iterations as recorded count every start, so a
// fast failure would look like keeping up.
func achievedIterations(r *result.Result) float64 {
	if r.Run.DurationS <= 0 || r.Totals.Requests == 0 {
		return 0
	}
	iters := float64(r.Totals.Iterations)
	if iters == 0 {
		iters = float64(r.Totals.Requests)
	}
	// Scale by the success rate: with one request per iteration this is
	// exact; with several it is the share of work that succeeded.
	return iters * float64(r.Totals.Successful) / float64(r.Totals.Requests) / r.Run.DurationS
}

// writeKnee prints the knee line. The knee is drawn from judged levels
// only (FindKnee), so the line names the suspect levels it left out where
// they are what a reader would look for: below a knee at the lowest rate
// judged, above the highest rate judged when there is no knee.
func writeKnee(w io.Writer, c *Capacity, levels []result.Level) {
	k := c.Knee
	switch {
	case c.KneeFound && k.FollowedUpTo > 0:
		fmt.Fprintf(w, "Knee: throughput followed the offered rate up to %s/s (p95 %s); at %s/s: %s\n",
			compact(k.FollowedUpTo), result.FormatDuration(k.P95BeforeUS), compact(k.AtRate), k.Reason)
	case c.KneeFound:
		if below := suspectBetween(levels, 0, k.AtRate); len(below) > 0 {
			// Lower rates ran, but their figures are the generator's.
			fmt.Fprintf(w, "Knee: at the lowest rate judged (%s below it suspect); at %s/s: %s\n",
				strings.Join(below, ", "), compact(k.AtRate), k.Reason)
			return
		}
		fmt.Fprintf(w, "Knee: already at the lowest rate, %s/s: %s\n", compact(k.AtRate), k.Reason)
	case k.FollowedUpTo > 0:
		fmt.Fprintf(w, "Knee: not reached - throughput followed the offered rate up to %s/s", compact(k.FollowedUpTo))
		if above := suspectBetween(levels, k.FollowedUpTo, math.Inf(1)); len(above) > 0 {
			fmt.Fprintf(w, "; %s above it suspect, not judged", strings.Join(above, ", "))
		}
		fmt.Fprintln(w)
	case len(suspectBetween(levels, 0, math.Inf(1))) > 0:
		fmt.Fprintln(w, "Knee: not judged - every level that ran in full was suspect")
	}
}

// LittleAt applies Little's law to one level's result.
func LittleAt(r *result.Result, p *plan.Plan) Little {
	var l Little
	if r == nil || r.Run.DurationS <= 0 {
		return l
	}
	l.RPS = gate.GoodputRPS(r)
	l.AvgLatencyUS = r.Totals.LatencyOK.AvgUS
	l.BusyUsers = l.RPS * l.AvgLatencyUS / 1e6
	if r.Totals.Iterations > 0 {
		l.IterationsPerS = float64(r.Totals.Iterations) / r.Run.DurationS
		// Requests that ran (latency_all's), not dropped arrivals: they
		// have no latency and are no iteration's time.
		perIter := float64(r.Totals.Timed()) / float64(r.Totals.Iterations)
		l.IterationS = perIter*r.Totals.LatencyAll.AvgUS/1e6 + meanThink(p).Seconds()
		l.ClosedUsers = l.IterationsPerS * l.IterationS
	}
	return l
}

// meanThink is the think time an average iteration spends, by scenario
// weight.
func meanThink(p *plan.Plan) time.Duration {
	var sum, weights float64
	for _, s := range p.Scenarios {
		var d time.Duration
		for _, st := range s.Steps {
			if st.Kind == plan.StepThink {
				d += (st.ThinkMin + st.ThinkMax) / 2
			}
		}
		sum += float64(d) * float64(s.Weight)
		weights += float64(s.Weight)
	}
	if weights == 0 {
		return 0
	}
	return time.Duration(sum / weights)
}

// WriteCapacity prints the search: every level in the order it ran, the
// capacity, the knee and the Little's-law check.
func WriteCapacity(w io.Writer, c *Capacity, slo []string) error {
	var levels []result.Level
	if c.Result != nil {
		levels = c.Result.Levels
	}
	var planned []float64
	for _, l := range levels {
		planned = append(planned, l.Value)
	}
	if err := WriteGates(w, "rate", planned, slo, levels, "text"); err != nil {
		return err
	}
	WriteLevelNotes(w, levels)
	fmt.Fprintln(w)
	switch {
	case c.Undetermined != "":
		fmt.Fprintf(w, "Capacity: undetermined - the levels that bound it say more about the generator than the target: %s\n", c.Undetermined)
		if c.Rate > 0 {
			advice := "split the load with --workers or use a bigger generator"
			if c.CannotSplit != "" {
				advice = "use a bigger generator; the load cannot be split: " + c.CannotSplit
			}
			fmt.Fprintf(w, "(%s iterations/s met the SLOs, but that is no answer about the target; %s)\n", compact(c.Rate), advice)
		}
	case c.Rate > 0:
		fmt.Fprintf(w, "Capacity: %s iterations/s meet the SLOs", compact(c.Rate))
		if c.FailedAt > 0 {
			fmt.Fprintf(w, "; %s/s does not", compact(c.FailedAt))
		}
		fmt.Fprintf(w, " (%s)\n", c.Stopped)
	default:
		fmt.Fprintf(w, "Capacity: no rate tried met the SLOs (%s)\n", c.Stopped)
	}
	if c.BoundBy != "" {
		fmt.Fprintf(w, "Bound by: %s\n", c.BoundBy)
	}
	writeKnee(w, c, levels)
	if l := c.Little; l.RPS > 0 {
		fmt.Fprintf(w, "Little's law at %s/s: %.1f req/s x %s mean latency = %.1f requests in flight",
			compact(c.Rate), l.RPS, result.FormatDuration(int64(l.AvgLatencyUS)), l.BusyUsers)
		if l.ClosedUsers > 0 {
			fmt.Fprintf(w, "; a closed model needs users = %.1f iterations/s x %.3fs per iteration (requests + think) = %.0f users",
				l.IterationsPerS, l.IterationS, math.Ceil(l.ClosedUsers))
		}
		fmt.Fprintln(w)
	}
	return nil
}
