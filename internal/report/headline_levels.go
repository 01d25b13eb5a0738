package report

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/result"
)

// headlineLabel names the whole run's figures: by its load, except for a
// run of several levels, whose merged figures belong to no one level.
func headlineLabel(r *result.Result) string {
	if len(r.Levels) > 0 {
		return "All levels"
	}
	return loadLabel(r)
}

// levelsLoad names the levels of a multi-level run where a single run
// names its peak ("up to 12 users"): the merged result's peak is only its
// largest level's.
func levelsLoad(r *result.Result) string {
	n := plural(len(r.Levels), "level") + ": "
	vary := r.Levels[0].Vary
	labels := make([]string, len(r.Levels))
	for i, l := range r.Levels {
		labels[i] = levelLabel(l)
		if l.Vary != vary {
			vary = ""
		}
	}
	if len(r.Levels) == 1 || vary == "" || vary == "rate" {
		return n + strings.Join(labels, ", ")
	}
	// "3 levels: 100, 1000, 10000 users" rather than the unit three times.
	for i, l := range r.Levels {
		labels[i] = number(l.Value)
	}
	return n + strings.Join(labels, ", ") + " " + vary
}

// headline is the summary table at the top of the Markdown report, and of
// the text and HTML reports of a run of several levels (gates, sweep,
// capacity): one column of the run's figures, or one column per level,
// each with that level's own figures, and a last column for all levels
// together. A single column headed by the largest level would show the
// merged figures of every level under that level's name.
func headline(r *result.Result) (*plainTable, error) {
	t := &plainTable{Head: []string{"Metric"}}
	results := make([]*result.Result, 0, len(r.Levels)+1)
	for _, l := range r.Levels {
		t.Head = append(t.Head, levelLabel(l))
		results = append(results, l.Result)
	}
	t.Head = append(t.Head, headlineLabel(r))
	results = append(results, r)
	var maps []map[string]int64
	for _, x := range results {
		if x != nil {
			maps = append(maps, x.Totals.ByClass)
		}
	}
	classes := presentClasses(maps...)
	names := []string{"Duration", "Requests", "Throughput", "P50", "P95", "P99", "Requests Failed"}
	for _, c := range classes {
		names = append(names, classTitle(c))
	}
	t.Rows = make([][]string, len(names))
	for i, n := range names {
		t.Rows[i] = []string{n}
	}
	for i, x := range results {
		col, err := headlineColumn(x, classes)
		if err != nil {
			if i < len(r.Levels) {
				return nil, fmt.Errorf("level %d (%s): %w", i+1, t.Head[i+1], err)
			}
			return nil, err
		}
		for j := range t.Rows {
			t.Rows[j] = append(t.Rows[j], col[j])
		}
	}
	return t, nil
}

// headlineColumn is one result's figures in the headline's row order; a
// level that never ran (nil) shows dashes.
func headlineColumn(r *result.Result, classes []string) ([]string, error) {
	if r == nil {
		col := make([]string, 7+len(classes))
		for i := range col {
			col[i] = "-"
		}
		return col, nil
	}
	ok, err := r.Totals.LatencyOK.Recompute()
	if err != nil {
		return nil, fmt.Errorf("totals latency_ok: %w", err)
	}
	col := []string{runDuration(r.Run.DurationS), fmt.Sprint(r.Totals.Requests), fmt.Sprintf("%.2f req/s", throughput(r)),
		latencyOrDash(ok, ok.P50US), latencyOrDash(ok, ok.P95US), latencyOrDash(ok, ok.P99US), pct(r.Totals.Failed, r.Totals.Requests)}
	for _, c := range classes {
		col = append(col, fmt.Sprint(r.Totals.ByClass[c]))
	}
	return col, nil
}

// textLevels writes the headline of a multi-level run in the terminal
// summary, in place of the one run's summary lines, and says that the
// sections after it are of all levels together.
func textLevels(b *bytes.Buffer, r *result.Result) error {
	t, err := headline(r)
	if err != nil {
		return err
	}
	widths := make([]int, len(t.Head))
	for _, row := range append([][]string{t.Head}, t.Rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		var sb strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i == 0 {
				sb.WriteString(c + pad)
			} else {
				sb.WriteString("  " + pad + c) // figures line up on the right
			}
		}
		b.WriteString(strings.TrimRight(sb.String(), " ") + "\n")
	}
	line(t.Head)
	for _, row := range t.Rows {
		line(row)
	}
	b.WriteString("\nLatencies are over successful requests. The sections below are of all levels together.\n\n")
	return nil
}
