package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/session"
)

func init() {
	extraCommands = append(extraCommands, newCompareCmd, newMergeCmd)
}

// compareFlags are compare's flags; --vs is read from the arguments.
type compareFlags struct {
	format, out, labels, minEffect string
	failOnWorse                    bool
}

func newCompareCmd(pr session.Process) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare BASELINE.json OTHER.json [MORE.json ...] | compare A1.json [A2.json ...] --vs B1.json [B2.json ...]",
		Short: "Compare runs side by side against the first, with a noise-aware verdict",
		Long: `Compare two or more result files: one column per run with P50, P95, P99,
throughput, failure rate and each failure class, the change against the
first run (absolute and %), per-step P95 and failure rate, and a verdict
— better, worse, within noise or not judged — for each run against the
first.

The verdict rests on the runs' seconds, not their requests: each metric
(p50, p95, p99 of each second, throughput, error rate) is compared over
the per-second series, with a 99 % interval from a block bootstrap that
keeps neighbouring seconds together. A metric is worse or better when
its interval excludes no change and the change is at least --min-effect,
"no change" only when the whole interval lies within ±--min-effect, and
"unclear" otherwise (the runs cannot tell). The verdict's latencies are medians of the
per-second percentiles, not the table's whole-run ones. Seconds in
which the generator lagged are left out; different plans or models and
partial runs are not judged. Sweeps and gates are judged level by level.

One run a side cannot see how much runs differ from each other, so on a
shared machine its p95 and p99 verdicts need large changes (a short
run's tail moves a lot from run to run). For a decisive answer run each
side several times and give them as two groups:
A1 A2 A3 --vs B1 B2 B3 judges the runs as the samples (the mean latency
too), and longer runs narrow the intervals.

--format html overlays the runs' charts on one time axis (seconds since
each run's start).`,
		Example: `  stampede compare before.json after.json
  stampede compare v1.json v2.json v3.json --labels V1,V2,V3 --format md -o compare.md
  stampede compare base.json pr.json --format html -o compare.html --fail-on-worse
  stampede compare a1.json a2.json a3.json --vs b1.json b2.json b3.json --min-effect 5%`,
		// Flags are parsed here, so that --vs can split the files in two.
		DisableFlagParsing: true,
		RunE:               func(cmd *cobra.Command, raw []string) error { return f.run(cmd, pr, raw) },
	}
	cmd.Flags().StringVar(&f.format, "format", "text", "text, md or html")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&f.labels, "labels", "", "comma-separated run names, one per file (default: the file names)")
	cmd.Flags().BoolVar(&f.failOnWorse, "fail-on-worse", false, "exit 1 when a run (or the --vs side) is judged worse than the baseline")
	cmd.Flags().StringVar(&f.minEffect, "min-effect", "", fmt.Sprintf("smallest change that counts, e.g. 5%% (default %g%%)", report.DefaultMinEffect*100))
	cmd.Flags().Bool("vs", false, "the result files after it are the other side of repeats; those before it, the baseline's")
	return cmd
}

// run compares the result files named in raw as the flags say.
func (f *compareFlags) run(cmd *cobra.Command, pr session.Process, raw []string) error {
	files, baselines, help, err := compareArgs(cmd, raw)
	if help {
		return cmd.Help()
	}
	if err != nil {
		return fail(exitUsage, err)
	}
	return session.Compare(pr, session.CompareFlags{
		Files: files, Baselines: baselines, Format: f.format, Out: f.out,
		Labels: f.labels, MinEffect: f.minEffect, FailOnWorse: f.failOnWorse,
	})
}

// compareArgs parses compare's flags and files; "--vs" splits the files
// into the baseline's runs and the other side's (baselines is how many
// come before it; 0 without --vs).
func compareArgs(cmd *cobra.Command, raw []string) (files []string, baselines int, help bool, err error) {
	parts := [][]string{raw}
	if i := slices.Index(raw, "--vs"); i >= 0 {
		parts = [][]string{raw[:i], raw[i+1:]}
		if slices.Contains(parts[1], "--vs") {
			return nil, 0, false, errors.New("--vs is given twice: it splits the files into two sides")
		}
	}
	fs := cmd.Flags()
	for k, part := range parts {
		if err := fs.Parse(part); err != nil {
			return nil, 0, false, err
		}
		if h, _ := fs.GetBool("help"); h {
			return nil, 0, true, nil
		}
		files = append(files, fs.Args()...)
		if k == 0 && len(parts) == 2 {
			baselines = len(files)
			if baselines == 0 {
				return nil, 0, false, errors.New("--vs needs the baseline's result files before it")
			}
		}
	}
	switch {
	case len(parts) == 2 && len(files) == baselines:
		return nil, 0, false, errors.New("--vs needs result files after it")
	case len(files) < 2:
		return nil, 0, false, fmt.Errorf("compare needs at least two result files, got %d", len(files))
	}
	return files, baselines, false, nil
}

func newMergeCmd(pr session.Process) *cobra.Command {
	var r session.MergeRequest
	cmd := &cobra.Command{
		Use:   "merge RESULT.json RESULT.json [...] [-o merged.json]",
		Short: "Merge result files (segments of a distributed run) into one, exactly",
		Long: `Merge result files into one: counts add up and the HDR histograms merge
exactly, so every percentile is what one recorder would have reported for
all the requests. Per-second series are aligned on wall-clock time. The
merged result is partial if any input was, and says which.

Thresholds are evaluated again on the merged whole, from the plan kept in
the result files, and the whole is judged as 'run' judges its result: the
exit code is 1 if a threshold or a level fails, 3 if the merged result is
partial. Inputs must come from the same plan (by SHA-256) unless --force
is given.`,
		Example: `  stampede merge seg-0.json seg-1.json seg-2.json -o run.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Paths = args
			return pr.Stdio(cmd.OutOrStdout(), cmd.ErrOrStderr()).Merge(r)
		},
	}
	cmd.Flags().StringVarP(&r.Out, "out", "o", "", "write the merged result here (atomically) instead of stdout")
	cmd.Flags().BoolVar(&r.Force, "force", false, "merge results of different plans")
	return cmd
}
