package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newCapacityCmd) }

// exitUndetermined: the search ran, but the levels that bound its answer
// are suspect or generator-bound, so no capacity of the target was found.
const exitUndetermined = 4

func newCapacityCmd() *cobra.Command {
	var (
		slo           []string
		start, maxR   float64
		stepHold      time.Duration
		ramp          time.Duration
		budget        time.Duration
		out, demoOpts string
		quiet         bool
		split         levelSplit
	)
	cmd := &cobra.Command{
		Use:   `capacity PLAN --slo "p95 < 500ms" [--slo ...]`,
		Short: "Find the highest open-model arrival rate that meets the SLOs",
		Long: `Search for the plan's capacity: the highest open-model arrival rate
(iterations/s) at which every --slo and every threshold of the plan holds. The rate doubles from --start
until a level fails (or --max), then bisects between the best pass and the
first failure until they are within 5%, never starting a level that would
overrun --budget. Each level runs for --step-hold. A closed-model plan is
run as an open model at each rate.

Prints every level, the capacity, the knee (where achieved throughput
stopped following the offered rate or p95 rose) and the Little's-law check
users = throughput x latency for the closed-model equivalent.

Exit codes: 0 a capacity was found; 1 no rate met the SLOs; 2 bad usage;
3 the run could not complete; 4 undetermined: a level that bounds the
answer is suspect or generator-bound (dropped arrivals, generator lag or
CPU), so the limit found may be the generator's ("capacity": undetermined
in the result's capacity indicator).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			for _, s := range slo {
				if _, err := gate.Parse(s); err != nil {
					return fail(exitUsage, fmt.Errorf("--slo: %v", err))
				}
			}
			p, err := loadLevelsPlan(args[0], false)
			if err != nil {
				return err
			}
			if len(levels.Criteria(p, slo)) == 0 {
				return fail(exitUsage, fmt.Errorf(`%s has no thresholds: give at least one --slo, such as --slo "p95 < 500ms" --slo "error_rate < 1%%"`, args[0]))
			}
			// Every rate holds the same max_in_flight and connections, so
			// the first rate's open files are every rate's.
			if err := split.check(p); err != nil {
				return err
			}
			if start > 0 && stepHold > 0 {
				if err := checkLevelsFitIn(p, plan.VaryRate, []float64{start}, ramp, stepHold, split.processes()); err != nil {
					return err
				}
			}
			// The search's levels are not known in advance: set aside room
			// for a dozen of them.
			out, s, opts, stop, err := prepareLevels(stderr, p, "capacity", out, demoOpts, 12*levelsNeed(p, plan.VaryRate, []float64{start}, ramp, stepHold))
			if err != nil {
				return err
			}
			defer s.Close()
			defer stop()
			outputs.planLevels(plan.VaryRate, nil, ramp, stepHold)
			disp := &levelsLive{stderr: stderr, quiet: quiet, announce: func(e levels.Event) string {
				return fmt.Sprintf("trying %s - %s %v", levels.FormatLevel(e.Vary, e.Value), e.Phase, e.Duration)
			}}
			co := levels.CapacityOptions{Start: start, Max: maxR, Budget: budget}
			lo := levels.Options{Run: opts, Hold: stepHold, Ramp: ramp, SLO: slo}
			lo.Run.Progress, lo.Event = disp.progress, disp.event
			if lo.Runner, err = split.runner(cmd, p, args[0], out); err != nil {
				return err
			}
			e := &session.Levels{Plan: p, Options: lo, Capacity: &co}
			oc := s.Run(e)
			disp.done()
			if oc.Result == nil || oc.Quit {
				return oc.Err()
			}
			if err := levels.WriteCapacity(stdout, e.Found, levels.Criteria(p, slo)); err != nil {
				return fail(exitRun, err)
			}
			writeIndicators(stdout, oc.Result.Indicators)
			if oc.SaveErr == nil {
				fmt.Fprintf(stderr, "result saved to %s\n", out)
			}
			// No level passed: no capacity was found.
			if oc.SaveErr != nil || oc.RunErr != nil || oc.Verdict == gate.Incomplete || e.Found == nil || e.Found.Undetermined == "" {
				return oc.Err()
			}
			return fail(exitUndetermined, nil)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&slo, "slo", nil, `SLO each level must meet, threshold syntax (repeatable), e.g. "p95 < 500ms"`)
	f.Float64Var(&start, "start", 10, "first rate tried, iterations/s")
	f.Float64Var(&maxR, "max", 100000, "highest rate tried, iterations/s")
	f.DurationVar(&stepHold, "step-hold", 10*time.Second, "how long each rate is measured")
	f.DurationVar(&ramp, "ramp", 0, "unmeasured ramp before each rate")
	f.DurationVar(&budget, "budget", 5*time.Minute, "most wall time the search may take")
	f.StringVarP(&out, "out", "o", "", "result file (default stampede-<name>-capacity-<time>.json)")
	f.StringVar(&demoOpts, "demo", "", "demo target settings when the plan says target: demo")
	f.BoolVarP(&quiet, "quiet", "q", false, "no live progress on stderr")
	split.add(f, false)
	outputs.addDashboard(f) // --dashboard (outputs.go)
	return cmd
}
