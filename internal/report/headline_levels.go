package report

import (
	"bytes"
	"fmt"

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

// mdHeadline writes the summary table at the top of a Markdown report. A
// run of several levels (gates, sweep, capacity) gets one column per
// level, each with that level's own figures, and a last column for all
// levels together: a single column headed by the largest level would show
// the merged figures of every level under that level's name.
func mdHeadline(b *bytes.Buffer, r *result.Result, label string, rows [][]string) error {
	if len(r.Levels) == 0 {
		mdTable(b, []string{"Metric", label}, rows)
		return nil
	}
	head := []string{"Metric"}
	var cols [][]string
	maps := []map[string]int64{r.Totals.ByClass}
	for _, l := range r.Levels {
		if l.Result != nil {
			maps = append(maps, l.Result.Totals.ByClass)
		}
	}
	classes := presentClasses(maps...)
	for i, l := range r.Levels {
		head = append(head, levelLabel(l))
		col, err := headlineColumn(l.Result, classes)
		if err != nil {
			return fmt.Errorf("level %d (%s): %w", i+1, levelLabel(l), err)
		}
		cols = append(cols, col)
	}
	head = append(head, label)
	all, err := headlineColumn(r, classes)
	if err != nil {
		return err
	}
	cols = append(cols, all)
	names := []string{"Duration", "Requests", "Throughput", "P50", "P95", "P99", "Requests Failed"}
	for _, c := range classes {
		names = append(names, classTitle(c))
	}
	var table [][]string
	for i, n := range names {
		row := []string{n}
		for _, col := range cols {
			row = append(row, col[i])
		}
		table = append(table, row)
	}
	mdTable(b, head, table)
	return nil
}

// headlineColumn is one result's figures in the headline's row order.
func headlineColumn(r *result.Result, classes []string) ([]string, error) {
	if r == nil {
		col := []string{"-", "-", "-", "-", "-", "-", "-"}
		for range classes {
			col = append(col, "-")
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
