package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

func init() { extraCommands = append(extraCommands, newCapacityCmd) }

func newCapacityCmd() *cobra.Command {
	var (
		slo           []string
		start, maxR   float64
		stepHold      time.Duration
		ramp          time.Duration
		budget        time.Duration
		out, demoOpts string
		quiet         bool
	)
	cmd := &cobra.Command{
		Use:   `capacity PLAN --slo "p95 < 500ms" [--slo ...]`,
		Short: "Find the highest open-model arrival rate that meets the SLOs",
		Long: `Search for the plan's capacity: the highest open-model arrival rate
(iterations/s) at which every --slo holds. The rate doubles from --start
until a level fails (or --max), then bisects between the best pass and the
first failure until they are within 5%, never starting a level that would
overrun --budget. Each level runs for --step-hold. A closed-model plan is
run as an open model at each rate.

Prints every level, the capacity, the knee (where achieved throughput
stopped following the offered rate or p95 rose) and the Little's-law check
users = throughput x latency for the closed-model equivalent.

Exit codes: 0 a capacity was found; 1 no rate met the SLOs; 2 bad usage;
3 the run could not complete.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if len(slo) == 0 {
				return fail(exitUsage, fmt.Errorf(`give at least one --slo, such as --slo "p95 < 500ms" --slo "error_rate < 1%%"`))
			}
			for _, s := range slo {
				if _, err := gate.Parse(s); err != nil {
					return fail(exitUsage, fmt.Errorf("--slo: %v", err))
				}
			}
			p, err := loadLevelsPlan(args[0], false)
			if err != nil {
				return err
			}
			// Every rate holds the same max_in_flight and connections, so
			// the first rate's open files are every rate's.
			if start > 0 && stepHold > 0 {
				if err := checkLevelsFit(p, plan.VaryRate, []float64{start}, ramp, stepHold); err != nil {
					return err
				}
			}
			out, opts, stop, err := prepareLevels(stderr, p, "capacity", out, demoOpts)
			if err != nil {
				return err
			}
			defer stop()
			ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			disp := &levelsLive{stderr: stderr, quiet: quiet, announce: func(e levels.Event) string {
				return fmt.Sprintf("trying %s - %s %v", levels.FormatLevel(e.Vary, e.Value), e.Phase, e.Duration)
			}}
			co := levels.CapacityOptions{Start: start, Max: maxR, Budget: budget,
				Options: levels.Options{Run: opts, Hold: stepHold, Ramp: ramp, SLO: slo}}
			co.Run.Progress, co.Event = disp.progress, disp.event
			c, runErr := levels.SearchCapacity(ctx, p, co)
			disp.done()
			if c == nil || c.Result == nil {
				if runErr == nil {
					runErr = fmt.Errorf("no level could run within the budget of %v", budget)
				}
				return runFailure(runErr)
			}
			c.Result.Indicators = append([]result.Indicator{capacityIndicator(c)}, c.Result.Indicators...)
			if err := result.Write(out, c.Result); err != nil {
				return fail(exitRun, fmt.Errorf("the result could not be saved to %s: %v", out, err))
			}
			if err := levels.WriteCapacity(stdout, c, slo); err != nil {
				return fail(exitRun, err)
			}
			writeIndicators(stdout, c.Result.Indicators)
			fmt.Fprintf(stderr, "result saved to %s\n", out)
			if runErr != nil {
				return runFailure(runErr)
			}
			// No level passed: no capacity was found.
			return verdictErr(gate.Judge(gate.Outcome{Incomplete: c.Result.Run.Partial, LevelFailed: c.Rate == 0}))
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
	return cmd
}

// capacityIndicator records the search's answer in the result file, with
// its evidence, for tools that read results rather than the terminal.
func capacityIndicator(c *levels.Capacity) result.Indicator {
	ev := map[string]float64{"capacity_rate": c.Rate, "failed_rate": c.FailedAt}
	if c.KneeFound {
		ev["knee_followed_up_to"] = c.Knee.FollowedUpTo
		ev["knee_at_rate"] = c.Knee.AtRate
		ev["knee_achieved"] = c.Knee.AchievedRPS
	}
	if c.Little.RPS > 0 {
		ev["little_rps"] = c.Little.RPS
		ev["little_avg_latency_us"] = c.Little.AvgLatencyUS
		ev["little_closed_users"] = c.Little.ClosedUsers
	}
	msg := fmt.Sprintf("Capacity %g iterations/s (%s)", c.Rate, c.Stopped)
	if c.KneeFound {
		msg += fmt.Sprintf("; knee at %g/s: %s", c.Knee.AtRate, c.Knee.Reason)
	}
	return result.Indicator{ID: "capacity", Severity: gate.SeverityInfo, Message: msg, Evidence: ev}
}
