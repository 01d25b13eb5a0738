package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/session"
)

func init() { extraCommands = append(extraCommands, newGatesCmd, newSweepCmd, newCapacityCmd) }

func newGatesCmd(pr session.Process) *cobra.Command { return gatesCmd(pr, nil) }

// gatesCmd is `gates`, or given k8s `k8s gates`: the same levels and
// flags, each level run as the pods of a Kubernetes Job (k8s.go).
func gatesCmd(pr session.Process, k8s *session.K8sRequest) *cobra.Command {
	var j session.LevelsRequest
	var outs outputFlags
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
			p, err := loadPlan(pr, args[0])
			if err != nil {
				return err
			}
			g := p.Gates
			if g == nil {
				return fail(exitUsage, fmt.Errorf("%s has no gates: add gates: {vary: users, levels: [...], hold: 1m, slo: [...]}", args[0]))
			}
			j.Kind, j.PlanFile, j.Plan, j.StopAtFail, j.Outputs = "gates", args[0], p, true, session.Outputs(outs)
			j.Vary, j.Values, j.Ramp, j.Hold, j.SLO = g.Vary, g.Levels, g.Ramp, g.Hold, locatedValues(g.SLO)
			j.Split.Args, j.Split.K8s = levelWorkerFlags(cmd), k8s
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Levels(j)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&j.Out, "out", "o", "", "result file (default stampede-<name>-gates-<time>.json)")
	f.StringVar(&j.Demo, "demo", "", `demo target settings when the plan says target: demo, e.g. "pool=2,service=20ms,wait=100ms"`)
	f.BoolVarP(&j.Quiet, "quiet", "q", false, "no live progress on stderr")
	f.StringVar(&j.Format, "format", "text", "table format: text or md")
	if k8s == nil {
		addLevelSplit(f, &j.Split, false)
	}
	outs.add(f)
	return cmd
}

// loadPlan loads a plan into a valid plan (session.Load): every plan
// error is reported the same way, with its place.
func loadPlan(pr session.Process, path string) (*plan.Plan, error) {
	return pr.Load(path, plan.LoadOptions{AllowFiles: allowFiles})
}

func locatedValues(ls []plan.Located) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Value
	}
	return out
}

// sweepFlags are sweep's own flags; the levels come from one of --users,
// --rate or --tenants.
type sweepFlags struct {
	users, rate, tenants string
	dataDir              string
}

// levels is the one level flag given, parsed.
func (s sweepFlags) levels() (string, []float64, error) {
	vary, list := "", ""
	for _, f := range []struct{ name, val string }{{plan.VaryUsers, s.users}, {plan.VaryRate, s.rate}, {plan.VaryTenants, s.tenants}} {
		if f.val == "" {
			continue
		}
		if vary != "" {
			return "", nil, fail(exitUsage, fmt.Errorf("give one of --users, --rate or --tenants, not both --%s and --%s", vary, f.name))
		}
		vary, list = f.name, f.val
	}
	if vary == "" {
		return "", nil, fail(exitUsage, fmt.Errorf("give the levels: --users 100,1000,10000 (or --rate, --tenants)"))
	}
	values, err := parseLevels(vary, list)
	if err != nil {
		return "", nil, fail(exitUsage, err)
	}
	return vary, values, nil
}

func newSweepCmd(pr session.Process) *cobra.Command { return sweepCmd(pr, nil) }

// sweepCmd is `sweep`, or given k8s `k8s sweep` (as gatesCmd).
func sweepCmd(pr session.Process, k8s *session.K8sRequest) *cobra.Command {
	var (
		j    session.LevelsRequest
		s    sweepFlags
		outs outputFlags
	)
	cmd := &cobra.Command{
		Use:   "sweep PLAN (--users L1,L2,... | --rate R1,R2,... | --tenants T1,T2,...)",
		Short: "Run the plan at every level and print one table, a column per level",
		Long: `Run the plan once per level, whatever each level's result, and print the
classic sweep table: rows P95 (successful requests) and Requests Failed, then
each criterion the levels were judged by (✓/✗ with the measured value) and a
Verdict row, one column per level, as text or Markdown (--format md). Each level holds for
--hold (default: the plan's gates.hold, else 30s) after an unmeasured
--ramp. One result file holds every level.

Exit codes: 0 every level met the plan's thresholds and gates.slo (when the
plan has gates); 1 some level did not; 2 bad usage; 3 the run could not
complete.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			vary, values, err := s.levels()
			if err != nil {
				return err
			}
			p, err := pr.Load(args[0], plan.LoadOptions{AllowFiles: allowFiles, DataDir: s.dataDir})
			if err != nil {
				return err
			}
			if g := p.Gates; g != nil {
				j.SLO = locatedValues(g.SLO)
				if !cmd.Flags().Changed("hold") {
					j.Hold = g.Hold
				}
				if !cmd.Flags().Changed("ramp") {
					j.Ramp = g.Ramp
				}
			}
			if j.Hold <= 0 {
				return fail(exitUsage, fmt.Errorf("--hold must be above zero"))
			}
			j.Kind, j.PlanFile, j.Plan, j.Vary, j.Values, j.Outputs = "sweep", args[0], p, vary, values, session.Outputs(outs)
			j.Split.Args, j.Split.K8s = levelWorkerFlags(cmd), k8s
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Levels(j)
		},
	}
	f := cmd.Flags()
	f.StringVar(&s.users, "users", "", "user levels, comma separated (10k means 10000)")
	f.StringVar(&s.rate, "rate", "", "open-model arrival rates per second, comma separated")
	f.StringVar(&s.tenants, "tenants", "", "tenant pool sizes, comma separated")
	f.DurationVar(&j.Hold, "hold", 30*time.Second, "how long each level is measured")
	f.DurationVar(&j.Ramp, "ramp", 0, "unmeasured ramp before each level")
	f.StringVarP(&j.Out, "out", "o", "", "result file (default stampede-<name>-sweep-<time>.json)")
	f.StringVar(&j.Demo, "demo", "", "demo target settings when the plan says target: demo")
	f.BoolVarP(&j.Quiet, "quiet", "q", false, "no live progress on stderr")
	f.StringVar(&j.Format, "format", "text", "table format: text or md")
	if k8s == nil {
		addLevelSplit(f, &j.Split, true)
		f.StringVar(&s.dataDir, "data-dir", "", "read the plan's data files from this directory (what a pod of 'k8s sweep --data-pvc' runs with)")
		_ = f.MarkHidden("data-dir")
	}
	outs.add(f)
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

func newCapacityCmd(pr session.Process) *cobra.Command {
	var r session.CapacityRequest
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
			if err := session.CheckSLO(r.SLO); err != nil {
				return err
			}
			p, err := loadPlan(pr, args[0])
			if err != nil {
				return err
			}
			r.PlanFile, r.Plan, r.Split.Args = args[0], p, levelWorkerFlags(cmd)
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Capacity(r)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&r.SLO, "slo", nil, `SLO each level must meet, threshold syntax (repeatable), e.g. "p95 < 500ms"`)
	f.Float64Var(&r.Start, "start", 10, "first rate tried, iterations/s")
	f.Float64Var(&r.Max, "max", 100000, "highest rate tried, iterations/s")
	f.DurationVar(&r.StepHold, "step-hold", 10*time.Second, "how long each rate is measured")
	f.DurationVar(&r.Ramp, "ramp", 0, "unmeasured ramp before each rate")
	f.DurationVar(&r.Budget, "budget", 5*time.Minute, "most wall time the search may take")
	f.StringVarP(&r.Out, "out", "o", "", "result file (default stampede-<name>-capacity-<time>.json)")
	f.StringVar(&r.Demo, "demo", "", "demo target settings when the plan says target: demo")
	f.BoolVarP(&r.Quiet, "quiet", "q", false, "no live progress on stderr")
	addLevelSplit(f, &r.Split, false)
	addDashboard(f, &r.Dashboard, "serve a live dashboard (the HTML report, updated every second, with each rate tried) on "+session.DashboardAddr+", or on --dashboard=ADDR")
	return cmd
}

// addLevelSplit is --workers of gates, sweep and capacity, and for sweep
// the hidden --segment and --start-at a --workers process runs with.
func addLevelSplit(f *pflag.FlagSet, l *session.LevelSplit, segmentFlags bool) {
	f.IntVar(&l.Workers, "workers", 0, "run each level as N segment processes on this machine, merged exactly and judged once (past one process's limits, such as open files)")
	if segmentFlags {
		f.StringVar(&l.Segment, "segment", "", "run only segment INDEX/COUNT of each level (what a --workers process runs)")
		f.StringVar(&l.StartAt, "start-at", "", "start at this RFC 3339 instant (the segments of a level share it)")
		f.DurationVar(&l.StartGrace, "start-grace", session.DefaultStartGrace, "how late after --start-at the segment may still start (a pod's)")
		f.BoolVar(&l.Emit, "emit-result", false, "also print the result (gzip, base64) between marker lines on stdout, for collection from a pod's log")
		f.StringVar(&l.IDsAfter, "ids-after", "", "VU,ITER: number the level's users after these (the levels before it, in other processes)")
		for _, name := range []string{"segment", "start-at", "start-grace", "emit-result", "ids-after"} {
			_ = f.MarkHidden(name)
		}
	}
}

// levelWorkerFlags are the global flags given (--allow-files), as `run
// --workers` passes them on to its workers (workerFlags): a segment runs
// 'sweep', whose own flags the coordinator sets, but it loads the same
// plan and must read its files from the same places.
func levelWorkerFlags(cmd *cobra.Command) []string {
	global := cmd.InheritedFlags()
	var args []string
	for _, a := range workerFlags(cmd.Flags()) {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if global.Lookup(name) != nil {
			args = append(args, a)
		}
	}
	return args
}
