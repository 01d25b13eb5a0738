package levels

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/stampede-load/stampede/internal/gate"
	"github.com/stampede-load/stampede/internal/result"
)

// FormatLevel prints a level value as tables head it: 100, 10k, 25/s.
func FormatLevel(vary string, v float64) string {
	s := compact(v)
	if vary == "rate" {
		return s + "/s"
	}
	return s
}

// compact writes round thousands the classic load-test report's way (10k, 25k) and keeps
// anything else exact.
func compact(v float64) string {
	if v >= 10000 && math.Mod(v, 1000) == 0 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Short3 formats a latency to three significant digits, as the classic load-test report's
// sweep table does (60ms, 4.72s, 29.7s): a table compares levels, and
// microsecond digits hide the comparison.
func Short3(us int64) string {
	if us <= 0 {
		return "0"
	}
	v, unit := float64(us), "µs"
	switch {
	case us >= 1_000_000:
		v, unit = v/1e6, "s"
	case us >= 1000:
		v, unit = v/1e3, "ms"
	}
	digits := 3 - int(math.Floor(math.Log10(v))) - 1
	digits = max(digits, 0)
	return strconv.FormatFloat(v, 'f', digits, 64) + unit
}

// Percent prints a share with at most two decimals and no trailing zeros
// (0%, 65.91%, 99.9%, 100%).
func Percent(f float64) string {
	s := strconv.FormatFloat(math.Round(f*10000)/100, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// Cell is one sweep table figure with the number it came from, so a test
// can hold the table to the per-level result data. A verdict's cell has
// only its text.
type Cell struct {
	Text  string
	Value float64
}

// SweepRow is one metric across the levels.
type SweepRow struct {
	Metric string
	Cells  []Cell
}

// sweepVerdictRow heads the sweep table's last row: each level's verdict.
const sweepVerdictRow = "Verdict"

// SweepTable is the sweep's summary table: one column per level, rows P95
// (of successful requests, as the run's latency statistics are) and
// Requests Failed; then, as the gates table has a column for each, one row
// per criterion the levels were judged by (its verdict with the measured
// value) and a last row with each level's verdict (levelVerdict), so a
// sweep that exits 1 shows which level missed what.
func SweepTable(levels []result.Level) (header []string, rows []SweepRow) {
	header = []string{"Metric"}
	p95 := SweepRow{Metric: "P95"}
	failed := SweepRow{Metric: "Requests Failed"}
	crit := criteriaOf(levels)
	judged := make([]SweepRow, len(crit))
	for k, e := range crit {
		judged[k].Metric = e
	}
	overall := SweepRow{Metric: sweepVerdictRow}
	for i, l := range levels {
		h := FormatLevel(l.Vary, l.Value)
		if i == 0 {
			h += " " + l.Vary
			if l.Vary == "rate" {
				h = FormatLevel(l.Vary, l.Value)
			}
		}
		header = append(header, h)
		for k, e := range crit {
			judged[k].Cells = append(judged[k].Cells, Cell{Text: verdictOf(l.SLO, e)})
		}
		overall.Cells = append(overall.Cells, Cell{Text: levelVerdict(l)})
		r := l.Result
		if r == nil || r.Totals.Requests == 0 {
			p95.Cells = append(p95.Cells, Cell{Text: "-"})
			failed.Cells = append(failed.Cells, Cell{Text: "-"})
			continue
		}
		if r.Totals.LatencyOK.Count > 0 {
			us := r.Totals.LatencyOK.P95US
			p95.Cells = append(p95.Cells, Cell{Text: Short3(us), Value: float64(us)})
		} else {
			p95.Cells = append(p95.Cells, Cell{Text: "-"})
		}
		f := float64(r.Totals.Failed) / float64(r.Totals.Requests)
		failed.Cells = append(failed.Cells, Cell{Text: Percent(f), Value: f})
	}
	rows = append([]SweepRow{p95, failed}, judged...)
	return header, append(rows, overall)
}

// criteriaOf is every criterion the levels were judged by, in the order
// they were judged (Criteria: the SLO, then the plan's thresholds).
func criteriaOf(levels []result.Level) []string {
	var out []string
	for _, l := range levels {
		for _, t := range l.SLO {
			if !slices.Contains(out, t.Expr) {
				out = append(out, t.Expr)
			}
		}
	}
	return out
}

// WriteSweep prints the sweep table as text ("text") or Markdown ("md").
func WriteSweep(w io.Writer, levels []result.Level, format string) error {
	header, rows := SweepTable(levels)
	table := [][]string{header}
	for _, r := range rows {
		line := []string{r.Metric}
		for _, c := range r.Cells {
			line = append(line, c.Text)
		}
		table = append(table, line)
	}
	return writeTable(w, table, format)
}

func writeTable(w io.Writer, table [][]string, format string) error {
	switch format {
	case "md":
		for i, row := range table {
			if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(escapeMD(row), " | ")); err != nil {
				return err
			}
			if i == 0 {
				sep := make([]string, len(row))
				for j := range sep {
					sep[j] = "---"
				}
				fmt.Fprintf(w, "| %s |\n", strings.Join(sep, " | "))
			}
		}
		return nil
	case "text", "":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, row := range table {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		return tw.Flush()
	}
	return fmt.Errorf("format %q: expected text or md", format)
}

func escapeMD(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return out
}

// WriteGates prints one row per planned level: throughput, latencies,
// errors, each SLO's verdict with its measured value, the level's
// headline indicator and its verdict (levelVerdict). Levels after a failed
// gate show as not run.
func WriteGates(w io.Writer, vary string, planned []float64, slo []string, levels []result.Level, format string) error {
	header := []string{vary, "req/s", "P50", "P95", "P99", "errors"}
	header = append(header, slo...)
	header = append(header, "ramp", "indicator", "gate")
	table := [][]string{header}
	for i, v := range planned {
		row := []string{FormatLevel(vary, v)}
		if i >= len(levels) || levels[i].Result == nil {
			row = append(row, "-", "-", "-", "-", "-")
			for range slo {
				row = append(row, "-")
			}
			row = append(row, "-", "-", verdictNotRun)
			table = append(table, row)
			continue
		}
		l := levels[i]
		r := l.Result
		// A level measured for no time has no rate to show: 0.0 would
		// read as a target that served nothing.
		rps := "-"
		if r.Run.DurationS > 0 {
			rps = fmt.Sprintf("%.1f", float64(r.Totals.Timed())/r.Run.DurationS)
		}
		errPct := "-"
		if r.Totals.Requests > 0 {
			errPct = Percent(float64(r.Totals.Failed) / float64(r.Totals.Requests))
		}
		ok := r.Totals.LatencyOK
		lat := func(us int64) string {
			if ok.Count == 0 {
				return "-"
			}
			return result.FormatDuration(us)
		}
		row = append(row, rps, lat(ok.P50US), lat(ok.P95US), lat(ok.P99US), errPct)
		for _, e := range slo {
			row = append(row, verdictOf(l.SLO, e))
		}
		row = append(row, RampCell(l), gate.Headline(r.Indicators), levelVerdict(l))
		table = append(table, row)
	}
	return writeTable(w, table, format)
}

// verdictOf is the cell of the verdict on expr among ts; "-" when the
// level was not judged by it.
func verdictOf(ts []result.Threshold, expr string) string {
	for _, t := range ts {
		if t.Expr == expr {
			return thresholdCell(t)
		}
	}
	return "-"
}

// thresholdCell is one criterion's verdict with its measured value
// ("✓ 41.3ms", "✗ 32.64/s"), or why it could not be judged.
func thresholdCell(t result.Threshold) string {
	switch {
	case t.Error != "":
		return "✗ " + t.Error
	case t.Pass:
		return "✓ " + t.Value
	}
	return "✗ " + t.Value
}

// Level verdicts as the tables show them.
const (
	verdictPass        = "PASS"
	verdictFail        = "FAIL"
	verdictInterrupted = "INTERRUPTED"
	verdictNotRun      = "not run"
	// verdictSuspect: the level met its criteria, but its generator
	// lagged, so its figures are no verdict on the target (Level.Suspect).
	verdictSuspect = "SUSPECT"
	// verdictFailSuspect: the level missed its criteria, and counts as a
	// failure (the exit code, the gates that stop), but its generator
	// lagged, so the miss may be the generator's.
	verdictFailSuspect = "FAIL (suspect)"
)

// levelVerdict is a level's verdict as the gates, sweep and capacity tables
// show it. A suspect level (the generator lagged) is not judged: one that
// met its criteria never reads PASS, and one that missed them says its
// failure is suspect. Level.Pass, which the exit code and the capacity
// search read, stays whether the level met its criteria; a capacity whose
// best pass or lowest failure is suspect is undetermined (bounds).
func levelVerdict(l result.Level) string {
	switch {
	case l.Result == nil:
		return verdictNotRun
	case l.Result.Run.Partial:
		return verdictInterrupted
	case !l.Pass && l.Suspect != "":
		return verdictFailSuspect
	case !l.Pass:
		return verdictFail
	case l.Suspect != "":
		return verdictSuspect
	}
	return verdictPass
}

// RampCell says how long a level's ramp took, and what was planned when it
// overran: the measured part starts where the ramp ended.
func RampCell(l result.Level) string {
	switch {
	case l.Result != nil && l.Result.Run.Partial && l.RampS == 0:
		return "-"
	case l.RampS == 0 && l.NotInPlace != "":
		return "not in place"
	case l.RampOverran:
		return fmtS(l.RampS) + " (planned " + fmtS(l.RampPlannedS) + ")"
	}
	return fmtS(l.RampS)
}

// WriteLevelNotes explains, under a table of levels, each level whose ramp
// overran (why the command took longer than planned, and what was
// measured) and each whose figures are suspect because the generator
// lagged.
func WriteLevelNotes(w io.Writer, levels []result.Level) {
	for _, l := range levels {
		name := l.Vary + " " + FormatLevel(l.Vary, l.Value)
		switch {
		case l.NotInPlace != "":
			fmt.Fprintf(w, "\n%s: %s; the level fails\n", name, l.NotInPlace)
		case l.RampOverran && l.Result != nil:
			fmt.Fprintf(w, "\n%s: the ramp took %s, planned %s; the level was measured for %s from when its population was in place\n",
				name, fmtS(l.RampS), fmtS(l.RampPlannedS), fmtS(l.Result.Run.DurationS))
		}
		if l.Suspect != "" {
			fmt.Fprintf(w, "\n%s: suspect, not a verdict on the target: %s\n", name, l.Suspect)
		}
	}
}
