package session

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/report"
)

// CompareFlags is one `stampede compare`: the result files (the first
// Baselines of them the baseline's repeats when --vs split them; 0: the
// first file is the baseline) and how to render the comparison.
type CompareFlags struct {
	Files       []string
	Baselines   int
	Format, Out string
	// Labels names the runs, comma-separated, one per file (default:
	// the file names).
	Labels string
	// MinEffect is the smallest change that counts, "5%" or "0.05".
	MinEffect   string
	FailOnWorse bool
}

// Compare renders the comparison of result files, and fails (exit 1)
// when asked to and a run is judged worse than the baseline.
func Compare(pr Process, f CompareFlags) error {
	opts := report.Options{Baselines: f.Baselines}
	if f.MinEffect != "" {
		v, err := parseShare(f.MinEffect)
		if err != nil {
			return Fail(ExitUsage, fmt.Errorf("--min-effect %q: %w", f.MinEffect, err))
		}
		opts.MinEffect = v
	}
	labels, err := compareLabels(f.Labels, f.Files)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	var render func(io.Writer, *report.Comparison) error
	switch f.Format {
	case "text":
		render = report.CompareText
	case "md", "markdown":
		render = report.CompareMarkdown
	case "html":
		render = report.CompareHTML
	default:
		return Fail(ExitUsage, fmt.Errorf("--format %q: expected text, md or html", f.Format))
	}
	rs, err := report.ReadAll(f.Files)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	c, err := report.CompareWith(rs, labels, opts)
	if err != nil {
		return Fail(ExitUsage, err)
	}
	if err := WriteRendered(pr, f.Out, func(w io.Writer) error { return render(w, c) }); err != nil {
		return err
	}
	if worse := c.Worse(); f.FailOnWorse && len(worse) > 0 {
		return Fail(ExitThreshold, fmt.Errorf("%s is worse than %s", worse[0], c.BaselineLabel()))
	}
	if f.FailOnWorse {
		warnNotJudged(pr.Stderr, c)
	}
	return nil
}

// warnNotJudged tells a CI gate (--fail-on-worse) that it passed runs it
// could not judge: the exit is 0 for those, as documented, and a job log
// that said nothing would read as "no worse" (runs too short to pair five
// intervals passed a p95 that went from 4 ms to 220 ms).
func warnNotJudged(w io.Writer, c *report.Comparison) {
	for _, j := range c.Judged {
		if j.Verdict.Outcome != report.NotJudged {
			continue
		}
		why := strings.TrimPrefix(strings.Join(j.Verdict.Findings, "; "), "not judged: ")
		fmt.Fprintf(w, "stampede: warning: %s was not judged against %s (%s): --fail-on-worse does not fail it\n", j.Label, c.BaselineLabel(), why)
	}
}

// WriteRendered renders into memory first so a failed render never
// leaves a half-written file behind, then writes to out or stdout.
func WriteRendered(pr Process, out string, render func(io.Writer) error) error {
	var b bytes.Buffer
	if err := render(&b); err != nil {
		return Fail(ExitRun, err)
	}
	if out == "" {
		_, err := pr.Stdout.Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return Fail(ExitUsage, err)
	}
	return nil
}

// compareLabels are the --labels given, one per file, or the files'
// names, which is what people passed on the command line and will
// recognise (the whole path where two share a name).
func compareLabels(given string, files []string) ([]string, error) {
	if given != "" {
		ls := strings.Split(given, ",")
		for i := range ls {
			ls[i] = strings.TrimSpace(ls[i])
		}
		if len(ls) != len(files) {
			return nil, fmt.Errorf("--labels has %d labels for %d result files", len(ls), len(files))
		}
		return ls, nil
	}
	labels := make([]string, len(files))
	seen := map[string]int{}
	for i, p := range files {
		labels[i] = strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
		seen[labels[i]]++
	}
	for i, p := range files {
		if seen[labels[i]] > 1 {
			labels[i] = p
		}
	}
	return labels, nil
}

// parseShare reads a share given as "5%" or "0.05".
func parseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil {
		return 0, errors.New("want a percentage such as 5% (or a share such as 0.05)")
	}
	if pct {
		v /= 100
	}
	if math.IsNaN(v) || v <= 0 || v >= 1 {
		return 0, errors.New("want a percentage above 0 and below 100%")
	}
	return v, nil
}
