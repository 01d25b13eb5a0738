package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newGatesCmd) }

func newGatesCmd() *cobra.Command {
	var (
		out      string
		demoOpts string
		quiet    bool
		format   string
		split    levelSplit
	)
	cmd := &cobra.Command{
		Use:   "gates PLAN",
		Short: "Run the plan's scaling gates in order, stopping at the first that fails",
		Long: `Run the plan's gates: each level of gates.levels in order (varying users,
rate or tenants), each for gates.hold after an unmeasured gates.ramp, judged
by gates.slo and by the plan's thresholds on that level's own figures. The
run stops at the first level that misses one of them. Prints one row per level (throughput, P50/P95/P99,
errors, each SLO's verdict, the headline indicator) and saves one result
file whose levels hold each level's complete result.

Exit codes: 0 every gate passed; 1 a gate failed; 2 bad usage or invalid
plan; 3 the run could not complete.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadLevelsPlan(args[0], true)
			if err != nil {
				return err
			}
			g := p.Gates
			if g == nil {
				return fail(exitUsage, fmt.Errorf("%s has no gates: add gates: {vary: users, levels: [...], hold: 1m, slo: [...]}", args[0]))
			}
			return runLevels(cmd, p, levelsJob{
				vary: g.Vary, values: g.Levels, ramp: g.Ramp, hold: g.Hold,
				slo: locatedValues(g.SLO), stopAtFail: true, out: out, demoOpts: demoOpts, quiet: quiet, format: format,
				kind: "gates", planFile: args[0], split: split,
			})
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "result file (default stampede-<name>-gates-<time>.json)")
	cmd.Flags().StringVar(&demoOpts, "demo", "", `demo target settings when the plan says target: demo, e.g. "pool=2,service=20ms,wait=100ms"`)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no live progress on stderr")
	cmd.Flags().StringVar(&format, "format", "text", "table format: text or md")
	split.add(cmd.Flags(), false)
	outputs.add(cmd.Flags()) // --output, --junit, --dashboard (outputs.go)
	return cmd
}

// loadLevelsPlan loads a plan as run does and also checks the gates' SLO
// syntax, so a typo fails before any load with its place in the file.
// loadLevelsPlan loads a plan for gates, sweep or capacity; loadPlan
// already checked the gates' SLO syntax with the thresholds.
func loadLevelsPlan(path string, _ bool) (*plan.Plan, error) {
	return loadPlan(path)
}

func locatedValues(ls []plan.Located) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Value
	}
	return out
}

// levelsJob is what gates and sweep share.
type levelsJob struct {
	kind       string // "gates" or "sweep": names the default result file
	vary       string
	values     []float64
	ramp, hold time.Duration
	slo        []string
	stopAtFail bool
	out        string
	demoOpts   string
	quiet      bool
	format     string
	planFile   string
	split      levelSplit
}

func runLevels(cmd *cobra.Command, p *plan.Plan, j levelsJob) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if j.format != "text" && j.format != "md" {
		return fail(exitUsage, fmt.Errorf("--format %q: expected text or md", j.format))
	}
	for _, v := range j.values {
		if _, err := p.AtLevel(j.vary, v, j.ramp, j.hold); err != nil {
			return fail(exitUsage, fmt.Errorf("level %s: %v", levels.FormatLevel(j.vary, v), err))
		}
	}
	if err := j.split.check(p); err != nil {
		return err
	}
	if err := checkLevelsFitIn(p, j.vary, j.values, j.ramp, j.hold, j.split.processes()); err != nil {
		return err
	}
	out, s, opts, stop, err := prepareLevels(stderr, p, j.kind, j.out, j.demoOpts, levelsNeed(p, j.vary, j.values, j.ramp, j.hold))
	if err != nil {
		return err
	}
	if err := j.split.apply(&opts, stderr); err != nil {
		s.Close()
		stop()
		return err
	}
	outputs.planLevels(j.vary, j.values, j.ramp, j.hold)
	defer s.Close()
	defer stop()

	disp := &levelsLive{stderr: stderr, quiet: j.quiet, announce: func(e levels.Event) string {
		return fmt.Sprintf("level %d/%d: %s %s - %s %v%s", e.Index+1, e.Count, e.Vary,
			levels.FormatLevel(e.Vary, e.Value), e.Phase, e.Duration, map[bool]string{true: " (not measured)"}[e.Phase == "ramp"])
	}}
	lo := levels.Options{Run: opts, Ramp: j.ramp, Hold: j.hold, SLO: j.slo, StopAtFail: j.stopAtFail}
	lo.Run.Progress, lo.Event = disp.progress, disp.event
	if lo.Runner, err = j.split.runner(cmd, p, j.planFile, out); err != nil {
		return err
	}
	e := &session.Levels{Plan: p, Vary: j.vary, Values: j.values, Options: lo}
	oc := s.Run(e)
	disp.done()
	if oc.Result == nil || oc.Quit {
		return oc.Err()
	}
	res := oc.Result
	if j.stopAtFail {
		err = levels.WriteGates(stdout, j.vary, j.values, levels.Criteria(p, j.slo), res.Levels, j.format)
	} else {
		err = levels.WriteSweep(stdout, res.Levels, j.format)
	}
	if err != nil {
		return fail(exitRun, err)
	}
	levels.WriteLevelNotes(stdout, res.Levels)
	writeIndicators(stdout, res.Indicators)
	if oc.SaveErr != nil || oc.RunErr != nil {
		return oc.Err()
	}
	fmt.Fprintf(stderr, "result saved to %s\n", out)
	switch {
	case oc.Verdict == gate.Fail && j.stopAtFail && e.Outcome.Failed >= 0:
		l := res.Levels[e.Outcome.Failed]
		fmt.Fprintf(stdout, "\nGate %s %s failed", l.Vary, levels.FormatLevel(l.Vary, l.Value))
		if e.Outcome.Failed+1 < len(j.values) {
			fmt.Fprintf(stdout, "; later levels were not run")
		}
		fmt.Fprintln(stdout)
	case oc.Verdict == gate.Pass && j.stopAtFail:
		fmt.Fprintln(stdout, "\nEvery gate passed")
	}
	return oc.Err()
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

// levelsOut names the result file as run does, with the command in it so
// a gates result is not taken for a single run's.
func levelsOut(p *plan.Plan, kind string, now time.Time) string {
	return strings.TrimSuffix(defaultOut(p, now), now.Format("20060102-150405")+".json") + kind + "-" + now.Format("20060102-150405") + ".json"
}

// prepareLevels does what gates, sweep and capacity all do before the first
// level, so a bad --out or --demo fails before any load: it names the result
// file when --out is empty, opens the session that writes it, and starts the
// demo target when the plan asks for it. stop ends that target.
func prepareLevels(stderr io.Writer, p *plan.Plan, kind, out, demoOpts string, need int64) (string, *session.Session, run.Options, func(), error) {
	if out == "" {
		out = levelsOut(p, kind, time.Now())
	}
	sinks, err := outputs.sinks(stderr)
	if err != nil {
		return out, nil, run.Options{}, nil, err
	}
	s, err := session.Open(session.Options{Out: out, Need: need, Stderr: stderr, Sinks: sinks})
	if err != nil {
		closeSinks(sinks)
		return out, nil, run.Options{}, nil, err
	}
	opts, stop, err := levelRunOptions(stderr, p, demoOpts)
	if err != nil {
		s.Close()
		return out, nil, run.Options{}, nil, err
	}
	return out, s, opts, stop, nil
}

// levelsLive keeps one live progress display per level. Events come from
// the level's own goroutine while progress comes from the run's ticker, so
// the current display is shared under a lock.
type levelsLive struct {
	stderr   io.Writer
	quiet    bool
	announce func(levels.Event) string // the line a new phase starts with, unless quiet

	mu  sync.Mutex
	cur *live
}

func (l *levelsLive) progress(pr run.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.update(pr)
	}
}

func (l *levelsLive) event(e levels.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.done()
	}
	if !l.quiet {
		fmt.Fprintln(l.stderr, l.announce(e))
	}
	// A ramp is not measured, so it gets no live line.
	l.cur = newLive(l.stderr, l.quiet || e.Phase == "ramp")
}

func (l *levelsLive) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur != nil {
		l.cur.done()
	}
}

// levelRunOptions starts the demo target when the plan asks for it.
func levelRunOptions(stderr io.Writer, p *plan.Plan, demoOpts string) (run.Options, func(), error) {
	tlsConf, err := tlsConfig(p)
	if err != nil {
		return run.Options{}, nil, fail(exitUsage, err)
	}
	opts := run.Options{Version: version, TLS: tlsConf}
	if p.Target != "demo" {
		if demoOpts != "" {
			return opts, nil, fail(exitUsage, errors.New("--demo applies only to plans with target: demo"))
		}
		return opts, func() {}, nil
	}
	dopts, err := demo.ParseOptions(demoOpts)
	if err != nil {
		return opts, nil, fail(exitUsage, fmt.Errorf("--demo: %v", err))
	}
	url, stop, err := startDemoProcess(dopts.String())
	if err != nil {
		return opts, nil, fail(exitRun, fmt.Errorf("start demo target: %v", err))
	}
	opts.BaseURL = url
	fmt.Fprintf(stderr, "demo target at %s (%s)\n", url, describeDemo(dopts))
	return opts, stop, nil
}

// writeIndicators lists the whole run's warnings with their evidence under
// the table, so the table's headline has its reasoning beside it.
func writeIndicators(w io.Writer, ins []result.Indicator) {
	first := true
	for _, in := range ins {
		if in.Severity != gate.SeverityWarn {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nPerformance Indicators:")
			first = false
		}
		fmt.Fprintf(w, "  ! %s: %s\n", in.ID, in.Message)
	}
}

// largestFirst orders the levels by the open files and rate they need,
// largest first, so a refusal gives the figures of the level that needs
// the most (a sweep to 100k users was told the 25k level's count).
func largestFirst(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration) []float64 {
	need := func(v float64) (int64, float64) {
		lp, err := p.AtLevel(vary, v, ramp, hold)
		if err != nil {
			return 0, 0
		}
		k := lp.PeakOf(1)
		return k.Files(), k.Rate
	}
	out := slices.Clone(values)
	slices.SortStableFunc(out, func(a, b float64) int {
		fa, ra := need(a)
		fb, rb := need(b)
		return cmp.Or(cmp.Compare(fb, fa), cmp.Compare(rb, ra))
	})
	return out
}
