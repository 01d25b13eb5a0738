package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// judge makes the verdicts: each run against the first, or the one
// verdict on the two sides of repeats.
func (c *Comparison) judge() {
	side := func(from, to int) []int {
		var idx []int
		for i := from; i < to; i++ {
			idx = append(idx, i)
		}
		return idx
	}
	c.Verdicts = []Verdict{{Outcome: Baseline}}
	if c.baselines == 0 {
		for i := 1; i < len(c.Runs); i++ {
			v := c.judgeSides([]int{0}, []int{i})
			c.Verdicts = append(c.Verdicts, v)
			c.Judged = append(c.Judged, JudgedSide{Label: c.Labels[i], Verdict: v})
		}
		return
	}
	a, b := side(0, c.baselines), side(c.baselines, len(c.Runs))
	v := c.judgeSides(a, b)
	for i := 1; i < len(c.Runs); i++ {
		if i < c.baselines {
			c.Verdicts = append(c.Verdicts, Verdict{Outcome: Baseline})
		} else {
			c.Verdicts = append(c.Verdicts, v)
		}
	}
	c.Judged = []JudgedSide{{Label: c.sideLabel(b), Verdict: v}}
}

// JudgedSide is a verdict and what it is on: one run, or the runs of the
// other side of repeats ("B1+B2+B3 (3 runs)").
type JudgedSide struct {
	Label   string
	Verdict Verdict
}

// BaselineLabel names what the verdicts are against.
func (c *Comparison) BaselineLabel() string {
	if c.baselines == 0 {
		return c.Labels[0]
	}
	idx := make([]int, c.baselines)
	for i := range idx {
		idx[i] = i
	}
	return c.sideLabel(idx)
}

func (c *Comparison) sideLabel(idx []int) string {
	if len(idx) == 1 {
		return c.Labels[idx[0]]
	}
	names := make([]string, len(idx))
	for i, j := range idx {
		names[i] = c.Labels[j]
	}
	return fmt.Sprintf("%s (%d runs)", strings.Join(names, "+"), len(idx))
}

// judgeSides compares the runs b against the runs a: per level when both
// are sweeps (each level is its own test, and a regression at one level
// is one even when the others hide it in the totals), else on the totals.
func (c *Comparison) judgeSides(a, b []int) Verdict {
	if why := c.unjudgeable(a, b); why != "" {
		return Verdict{Outcome: NotJudged, Findings: []string{"not judged: " + why}}
	}
	pick := func(idx []int, r func(int) *result.Result) []labelled {
		out := make([]labelled, len(idx))
		for k, i := range idx {
			out[k] = labelled{c.Labels[i], r(i)}
		}
		return out
	}
	all := slices.Concat(a, b)
	withLevels := 0
	for _, i := range all {
		if len(c.Runs[i].Levels) > 0 {
			withLevels++
		}
	}
	switch withLevels {
	case 0:
		whole := func(i int) *result.Result { return c.Runs[i] }
		return verdictOfSides([]sidesPart{{sidesBasis: compareSides(pick(a, whole), pick(b, whole), c.MinEffect)}}, c.MinEffect)
	case len(all):
	default:
		return Verdict{Outcome: NotJudged, Findings: []string{"not judged: a run of levels (gates, sweep) against a run of one load"}}
	}
	var parts []sidesPart
	for _, l := range c.Runs[a[0]].Levels {
		prefix := "at " + levelLabel(l) + ": "
		at := map[int]*result.Level{}
		var why string
		for _, i := range all {
			lv := levelAt(c.Runs[i], l)
			switch {
			case lv == nil || lv.Result == nil:
				why = cmp.Or(why, c.Labels[i]+" did not run it")
			case lv.NotInPlace != "":
				why = cmp.Or(why, c.Labels[i]+"'s population was not in place: "+lv.NotInPlace)
			}
			at[i] = lv
		}
		if why != "" {
			parts = append(parts, sidesPart{sidesBasis: sidesBasis{notJudged: why}, prefix: prefix})
			continue
		}
		level := func(i int) *result.Result { return at[i].Result }
		parts = append(parts, sidesPart{sidesBasis: compareSides(pick(a, level), pick(b, level), c.MinEffect), prefix: prefix})
	}
	return verdictOfSides(parts, c.MinEffect)
}

func levelAt(r *result.Result, l result.Level) *result.Level {
	for i := range r.Levels {
		if r.Levels[i].Vary == l.Vary && r.Levels[i].Value == l.Value {
			return &r.Levels[i]
		}
	}
	return nil
}

// unjudgeable says why runs a and b cannot be compared at all: a change
// of plan or model, or a partial run, is a difference the target did not
// make.
func (c *Comparison) unjudgeable(a, b []int) string {
	base := c.Runs[a[0]]
	for _, i := range slices.Concat(a, b) {
		r, l := c.Runs[i], c.Labels[i]
		switch {
		case r.Run.Partial:
			return l + " is a partial result"
		case r.Run.Model != base.Run.Model:
			return fmt.Sprintf("%s ran the %s model and %s the %s model", c.Labels[a[0]], base.Run.Model, l, r.Run.Model)
		case r.Plan.SHA256 != base.Plan.SHA256:
			return fmt.Sprintf("%s used a different plan from %s (%s vs %s)", l, c.Labels[a[0]], planID(r), planID(base))
		}
	}
	return ""
}

// Worse names the runs (or the side of repeats) judged worse.
func (c *Comparison) Worse() []string {
	var out []string
	for _, j := range c.Judged {
		if j.Verdict.Outcome == Worse {
			out = append(out, j.Label)
		}
	}
	return out
}
