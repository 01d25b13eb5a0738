package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/plan"
)

func init() { extraCommands = append(extraCommands, newSweepCmd) }

func newSweepCmd() *cobra.Command {
	var (
		users, rate, tenants string
		hold, ramp           time.Duration
		out, demoOpts        string
		quiet                bool
		format               string
		split                levelSplit
	)
	cmd := &cobra.Command{
		Use:   "sweep PLAN (--users L1,L2,... | --rate R1,R2,... | --tenants T1,T2,...)",
		Short: "Run the plan at every level and print one table, a column per level",
		Long: `Run the plan once per level, whatever each level's result, and print the
classic sweep table: rows P95 (successful requests) and Requests Failed, one
column per level, as text or Markdown (--format md). Each level holds for
--hold (default: the plan's gates.hold, else 30s) after an unmeasured
--ramp. One result file holds every level.

Exit codes: 0 every level met the plan's thresholds and gates.slo (when the
plan has gates); 1 some level did not; 2 bad usage; 3 the run could not
complete.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vary, list := "", ""
			for _, f := range []struct{ name, val string }{{plan.VaryUsers, users}, {plan.VaryRate, rate}, {plan.VaryTenants, tenants}} {
				if f.val == "" {
					continue
				}
				if vary != "" {
					return fail(exitUsage, fmt.Errorf("give one of --users, --rate or --tenants, not both --%s and --%s", vary, f.name))
				}
				vary, list = f.name, f.val
			}
			if vary == "" {
				return fail(exitUsage, fmt.Errorf("give the levels: --users 100,1000,10000 (or --rate, --tenants)"))
			}
			values, err := parseLevels(vary, list)
			if err != nil {
				return fail(exitUsage, err)
			}
			p, err := loadLevelsPlan(args[0], true)
			if err != nil {
				return err
			}
			var slo []string
			if g := p.Gates; g != nil {
				slo = locatedValues(g.SLO)
				if !cmd.Flags().Changed("hold") {
					hold = g.Hold
				}
				if !cmd.Flags().Changed("ramp") {
					ramp = g.Ramp
				}
			}
			if hold <= 0 {
				return fail(exitUsage, fmt.Errorf("--hold must be above zero"))
			}
			return runLevels(cmd, p, levelsJob{
				kind: "sweep", vary: vary, values: values, ramp: ramp, hold: hold, slo: slo,
				out: out, demoOpts: demoOpts, quiet: quiet, format: format, planFile: args[0], split: split,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&users, "users", "", "user levels, comma separated (10k means 10000)")
	f.StringVar(&rate, "rate", "", "open-model arrival rates per second, comma separated")
	f.StringVar(&tenants, "tenants", "", "tenant pool sizes, comma separated")
	f.DurationVar(&hold, "hold", 30*time.Second, "how long each level is measured")
	f.DurationVar(&ramp, "ramp", 0, "unmeasured ramp before each level")
	f.StringVarP(&out, "out", "o", "", "result file (default stampede-<name>-sweep-<time>.json)")
	f.StringVar(&demoOpts, "demo", "", "demo target settings when the plan says target: demo")
	f.BoolVarP(&quiet, "quiet", "q", false, "no live progress on stderr")
	f.StringVar(&format, "format", "text", "table format: text or md")
	split.add(f, true)
	outputs.add(f) // --output, --junit, --dashboard (outputs.go)
	return cmd
}

// parseLevels reads "100,1000,10k" (or rates "50/s,100"): load-test reports write
// its columns as 10k and 25k, so the flag takes them that way too.
func parseLevels(vary, s string) ([]float64, error) {
	var out []float64
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		num := strings.TrimSuffix(item, "/s")
		mult := 1.0
		if k, ok := strings.CutSuffix(num, "k"); ok {
			num, mult = k, 1000
		}
		v, err := strconv.ParseFloat(num, 64)
		v *= mult
		if err != nil || v <= 0 || vary != plan.VaryRate && v != float64(int64(v)) {
			return nil, fmt.Errorf("--%s: bad level %q: expected %s", vary, item, map[bool]string{true: "a rate above 0 such as 100 or 100/s", false: "a whole number such as 100 or 10k"}[vary == plan.VaryRate])
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: no levels given", vary)
	}
	return out, nil
}
