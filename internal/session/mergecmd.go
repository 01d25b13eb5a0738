package session

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
)

// MergeRequest is `stampede merge`.
type MergeRequest struct {
	Paths []string
	Out   string // empty: the merged result goes to stdout
	Force bool   // merge results of different plans
}

// Merge merges result files into one, judges it as run judges its own
// result (a partial input makes the whole incomplete, a failed level
// fails it) and writes it; the error carries the exit code.
func (pr Process) Merge(r MergeRequest) error {
	rs := make([]*result.Result, 0, len(r.Paths))
	for _, p := range r.Paths {
		res, err := result.Read(p)
		if err != nil {
			return Fail(ExitUsage, err)
		}
		rs = append(rs, res)
	}
	m, err := merge.Options{Force: r.Force, Names: r.Paths}.Results(rs)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	exprs, err := planThresholds(m.Plan.Source)
	if err != nil {
		return Fail(ExitUsage, fmt.Errorf("%s: plan source in the result: %w", r.Paths[0], err))
	}
	verdict := judgeMerged(m, exprs)
	if r.Out == "" {
		if err := report.JSON(pr.Stdout, m); err != nil {
			return Fail(ExitRun, err)
		}
	} else if err := result.Write(r.Out, m); err != nil {
		return Fail(ExitUsage, err)
	}
	pr.printMergeSummary(m, len(rs), r.Out)
	if gap, a, b := idleBetween(rs, r.Paths); gap > 0 {
		fmt.Fprintf(pr.Stderr, "stampede: warning: %s and %s did not run at the same time (%v apart): the merged duration holds that idle time, and the merged rate is spread over it; to set runs side by side, use stampede compare\n",
			a, b, gap.Round(time.Second))
	}
	return (&Outcome{Result: m, Verdict: verdict}).Err()
}

// judgeMerged sets the merged result's verdict parts, each level's as
// the level's run set them, and draws the verdict.
func judgeMerged(m *result.Result, exprs []string) gate.Verdict {
	m.Thresholds = gate.Evaluate(m, exprs)
	m.Indicators = gate.Indicators(m)
	if len(m.Levels) == 0 {
		return gate.Judge(gate.Outcome{Incomplete: m.Run.Partial, Thresholds: m.Thresholds})
	}
	levelFailed := false
	for i := range m.Levels {
		l := &m.Levels[i]
		slo := make([]string, len(l.SLO))
		for j, t := range l.SLO {
			slo[j] = t.Expr
		}
		l.SLO = gate.Evaluate(l.Result, slo)
		l.Result.Thresholds = gate.Evaluate(l.Result, exprs)
		l.Result.Indicators = gate.Indicators(l.Result)
		l.Pass = LevelPass(*l)
		levelFailed = levelFailed || !l.Pass
	}
	// As gates and sweep write them: each level's verdicts, named by
	// level. The plan's thresholds judged on all levels summed (loads
	// that never ran together) passed or failed no load.
	m.Thresholds = levels.NamedVerdicts(m.Levels)
	return gate.Judge(gate.Outcome{Incomplete: m.Run.Partial, Thresholds: m.Thresholds, LevelFailed: levelFailed})
}

// LevelPass is a level's verdict: complete, its criteria (SLO and the
// plan's thresholds) met, and its population in place while measured.
func LevelPass(l result.Level) bool {
	partial := l.Result == nil || l.Result.Run.Partial
	return gate.Judge(gate.Outcome{Incomplete: partial, Thresholds: l.SLO, LevelFailed: l.NotInPlace != ""}) == gate.Pass
}

// printMergeSummary says what was merged, whether it is partial, and each
// threshold's verdict.
func (pr Process) printMergeSummary(m *result.Result, inputs int, out string) {
	dest := out
	if dest == "" {
		dest = "stdout"
	}
	fmt.Fprintf(pr.Stderr, "merged %d results: %d requests, %d failed → %s\n", inputs, m.Totals.Requests, m.Totals.Failed, dest)
	if m.Run.Partial {
		fmt.Fprintf(pr.Stderr, "partial: %s\n", m.Run.PartialReason)
	}
	for _, t := range m.Thresholds {
		mark := "✓"
		if !t.Pass || t.Error != "" {
			mark = "✗"
		}
		detail := t.Value
		if t.Error != "" {
			detail = "error: " + t.Error
		}
		fmt.Fprintf(pr.Stderr, "  %s %s (%s)\n", mark, t.Expr, detail)
	}
}

// planThresholds reads only the thresholds of a plan's source: the rest of
// the plan (data files, ${ENV}) need not be available where results are
// merged, and thresholds are all a merge needs.
func planThresholds(src string) ([]string, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil
	}
	var p struct {
		Thresholds []string `yaml:"thresholds"`
	}
	if err := yaml.Unmarshal([]byte(src), &p); err != nil {
		return nil, err
	}
	return p.Thresholds, nil
}

// idleBetween is the longest time no input ran, between the first start
// and the last end of whole runs merged (segments of one run overlap),
// and the inputs on either side of it.
func idleBetween(rs []*result.Result, names []string) (gap time.Duration, before, after string) {
	type span struct {
		from, to time.Time
		name     string
	}
	var spans []span
	for i, r := range rs {
		if r.Run.Segment.Count > 1 {
			return 0, "", ""
		}
		from := r.Run.Started.Add(time.Duration(r.Run.LateStartS * float64(time.Second)))
		spans = append(spans, span{from, from.Add(time.Duration(r.Run.DurationS * float64(time.Second))), names[i]})
	}
	if len(spans) < 2 {
		return 0, "", ""
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from.Compare(b.from) })
	// last is the input that ends latest of those started so far.
	last := spans[0]
	for _, s := range spans[1:] {
		if d := s.from.Sub(last.to); d > gap {
			gap, before, after = d, last.name, s.name
		}
		if s.to.After(last.to) {
			last = s
		}
	}
	return gap, before, after
}
