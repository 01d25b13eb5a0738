package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/merge"
	"github.com/stampede-load/stampede/internal/report"
	"github.com/stampede-load/stampede/internal/result"
)

func init() {
	extraCommands = append(extraCommands, newCompareCmd, newMergeCmd)
}

// readResults reads every file; result.Read's errors name the file.
func readResults(paths []string) ([]*result.Result, error) {
	rs := make([]*result.Result, 0, len(paths))
	for _, p := range paths {
		r, err := result.Read(p)
		if err != nil {
			return nil, fail(exitUsage, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// writeOutput renders into memory first so a failed render never leaves a
// half-written file behind, then writes to out or stdout.
func writeOutput(cmd *cobra.Command, out string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return fail(exitRun, err)
	}
	if out == "" {
		_, err := cmd.OutOrStdout().Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return fail(exitUsage, err)
	}
	return nil
}

// defaultLabels names runs by their file names, which is what people
// passed on the command line and will recognise.
func defaultLabels(paths []string) []string {
	labels := make([]string, len(paths))
	seen := map[string]int{}
	for i, p := range paths {
		labels[i] = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		seen[labels[i]]++
	}
	for i, p := range paths {
		if seen[labels[i]] > 1 {
			labels[i] = p
		}
	}
	return labels
}

func newCompareCmd() *cobra.Command {
	var format, out, labels string
	var failOnWorse bool
	cmd := &cobra.Command{
		Use:   "compare BASELINE.json OTHER.json [MORE.json ...]",
		Short: "Compare runs side by side against the first, with a noise-aware verdict",
		Long: `Compare two or more result files: one column per run with P50, P95, P99,
throughput, failure rate and each failure class, the change against the
first run (absolute and %), per-step P95 and failure rate, and a verdict
for each run — better, worse or within noise — from the whole latency
histograms and the failure counts, not from a single percentile.

--format html overlays the runs' charts on one time axis (seconds since
each run's start).`,
		Example: `  stampede compare before.json after.json
  stampede compare v1.json v2.json v3.json --labels V1,V2,V3 --format md -o compare.md
  stampede compare base.json pr.json --format html -o compare.html --fail-on-worse`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ls []string
			if labels != "" {
				ls = strings.Split(labels, ",")
				for i := range ls {
					ls[i] = strings.TrimSpace(ls[i])
				}
				if len(ls) != len(args) {
					return fail(exitUsage, fmt.Errorf("--labels has %d labels for %d result files", len(ls), len(args)))
				}
			} else {
				ls = defaultLabels(args)
			}
			var render func(io.Writer, *report.Comparison) error
			switch format {
			case "text":
				render = report.CompareText
			case "md", "markdown":
				render = report.CompareMarkdown
			case "html":
				render = report.CompareHTML
			default:
				return fail(exitUsage, fmt.Errorf("--format %q: expected text, md or html", format))
			}
			rs, err := readResults(args)
			if err != nil {
				return err
			}
			c, err := report.Compare(rs, ls)
			if err != nil {
				return fail(exitUsage, err)
			}
			if err := writeOutput(cmd, out, func(w io.Writer) error { return render(w, c) }); err != nil {
				return err
			}
			if failOnWorse {
				for i, v := range c.Verdicts {
					if v.Outcome == report.Worse {
						return fail(exitThreshold, fmt.Errorf("%s is worse than %s", c.Labels[i], c.Labels[0]))
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, md or html")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&labels, "labels", "", "comma-separated run names, one per file (default: the file names)")
	cmd.Flags().BoolVar(&failOnWorse, "fail-on-worse", false, "exit 1 when any run is worse than the first")
	return cmd
}

func newMergeCmd() *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "merge RESULT.json RESULT.json [...] [-o merged.json]",
		Short: "Merge result files (segments of a distributed run) into one, exactly",
		Long: `Merge result files into one: counts add up and the HDR histograms merge
exactly, so every percentile is what one recorder would have reported for
all the requests. Per-second series are aligned on wall-clock time. The
merged result is partial if any input was, and says which.

Thresholds are evaluated again on the merged whole, from the plan kept in
the result files; the exit code is then 1 if one fails, as for 'run'.
Inputs must come from the same plan (by SHA-256) unless --force is given.`,
		Example: `  stampede merge seg-0.json seg-1.json seg-2.json -o run.json`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := readResults(args)
			if err != nil {
				return err
			}
			m, err := merge.Options{Force: force, Names: args}.Results(rs)
			if err != nil {
				return fail(exitUsage, err)
			}
			exprs, err := planThresholds(m.Plan.Source)
			if err != nil {
				return fail(exitUsage, fmt.Errorf("%s: plan source in the result: %w", args[0], err))
			}
			m.Thresholds = gate.Evaluate(m, exprs)
			m.Indicators = gate.Indicators(m)
			for i := range m.Levels {
				l := &m.Levels[i]
				slo := make([]string, len(l.SLO))
				for j, t := range l.SLO {
					slo[j] = t.Expr
				}
				l.SLO = gate.Evaluate(l.Result, slo)
				l.Pass = gate.AllPass(l.SLO)
				l.Result.Thresholds = gate.Evaluate(l.Result, exprs)
				l.Result.Indicators = gate.Indicators(l.Result)
			}
			if out == "" {
				if err := report.JSON(cmd.OutOrStdout(), m); err != nil {
					return fail(exitRun, err)
				}
			} else if err := result.Write(out, m); err != nil {
				return fail(exitUsage, err)
			}
			stderr := cmd.ErrOrStderr()
			dest := out
			if dest == "" {
				dest = "stdout"
			}
			fmt.Fprintf(stderr, "merged %d results: %d requests, %d failed → %s\n", len(rs), m.Totals.Requests, m.Totals.Failed, dest)
			if m.Run.Partial {
				fmt.Fprintf(stderr, "partial: %s\n", m.Run.PartialReason)
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
				fmt.Fprintf(stderr, "  %s %s (%s)\n", mark, t.Expr, detail)
			}
			return verdictErr(gate.Judge(gate.Outcome{Thresholds: m.Thresholds}))
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the merged result here (atomically) instead of stdout")
	cmd.Flags().BoolVar(&force, "force", false, "merge results of different plans")
	return cmd
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
