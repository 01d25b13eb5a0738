package report

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// selfLabel is the generator's own process, which every run records; the
// Generator line speaks for it, so the server table leaves it out.
const selfLabel = "process[self]"

// MonitorRow is one server metric summarised over the steady part.
type MonitorRow struct {
	Label, Metric string // "postgres[main]", "connections.active"
	Unit          string
	Min, Avg, Max float64
}

// MonitorTable summarises r's server series over the steady part of the
// run (result.SteadyWindow), grouped by monitor and sorted. Series at zero
// throughout are counted in zero rather than listed; series without a
// sample in the window (a monitor that died) in missing.
func MonitorTable(r *result.Result) (rows []MonitorRow, from, to float64, zero, missing int) {
	from, to = r.SteadyWindow()
	for key, s := range r.Monitors {
		label, metric := result.SplitMonitorKey(key)
		if label == selfLabel {
			continue
		}
		st := s.Stats(from, to)
		switch {
		case st.N == 0:
			missing++
		case st.Min == 0 && st.Max == 0:
			zero++
		default:
			rows = append(rows, MonitorRow{Label: label, Metric: metric, Unit: s.Unit, Min: st.Min, Avg: st.Avg, Max: st.Max})
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Label != rows[j].Label {
			return rows[i].Label < rows[j].Label
		}
		return rows[i].Metric < rows[j].Metric
	})
	return rows, from, to, zero, missing
}

// serverMetrics writes the server table and the monitors' problems.
func serverMetrics(b *bytes.Buffer, r *result.Result) {
	rows, from, to, zero, missing := MonitorTable(r)
	if len(rows) > 0 || zero > 0 || missing > 0 {
		title := fmt.Sprintf("Server Metrics (steady part %s-%s):", seconds(from), seconds(to))
		width := len(title) - 1
		for _, row := range rows {
			width = max(width, len(row.Metric)+4)
		}
		fmt.Fprintf(b, "%-*s %12s %12s %12s\n", width+2, title, "Min", "Avg", "Max")
		label := ""
		for _, row := range rows {
			if row.Label != label {
				label = row.Label
				fmt.Fprintf(b, "  %s\n", label)
			}
			fmt.Fprintf(b, "    %-*s %12s %12s %12s\n", width-2, row.Metric,
				result.FormatMonitorValue(row.Unit, row.Min), result.FormatMonitorValue(row.Unit, row.Avg), result.FormatMonitorValue(row.Unit, row.Max))
		}
		if notes := monitorNotes(zero, missing); len(notes) > 0 {
			fmt.Fprintf(b, "  (%s)\n", strings.Join(notes, "; "))
		}
		b.WriteString("\n")
	}
	if len(r.MonitorProblems) == 0 {
		return
	}
	b.WriteString("Monitor Problems:\n")
	for _, p := range r.MonitorProblems {
		mark := "⚠"
		if p.Severity == "error" {
			mark = "✗"
		}
		fmt.Fprintf(b, "  %s %s: %s (%s)\n", mark, p.Monitor, p.Message, problemWhen(p))
	}
	b.WriteString("\n")
}

func monitorNotes(zero, missing int) []string {
	var notes []string
	if zero > 0 {
		notes = append(notes, fmt.Sprintf("%d series at zero throughout not shown", zero))
	}
	if missing > 0 {
		notes = append(notes, fmt.Sprintf("%d series without a sample in the steady part", missing))
	}
	return notes
}

// problemWhen says when a monitor problem happened, on the run clock.
func problemWhen(p result.MonitorProblem) string {
	if p.Count > 1 {
		return fmt.Sprintf("%d times, %s-%s", p.Count, seconds(p.T), seconds(p.LastT))
	}
	return "at " + seconds(p.T)
}

// serverView is the server table and the monitors' problems as the
// Markdown and HTML reports lay them out; the figures are the text
// summary's (MonitorTable, FormatMonitorValue).
type serverView struct {
	Window   string // "9s-30s"
	Groups   []serverGroup
	Notes    []string
	Problems []serverProblem
	// Uncharted says which series the page's charts leave out (HTML only).
	Uncharted []string
}

type serverGroup struct {
	Label string
	Rows  []serverRow
}

type serverRow struct{ Metric, Min, Avg, Max string }

type serverProblem struct {
	Error                  bool
	Monitor, Message, When string
}

// serverViewOf is nil when the run has neither server series (other than
// the generator's own process) nor monitor problems.
func serverViewOf(r *result.Result) *serverView {
	rows, from, to, zero, missing := MonitorTable(r)
	if len(rows) == 0 && zero == 0 && missing == 0 && len(r.MonitorProblems) == 0 {
		return nil
	}
	v := &serverView{Window: seconds(from) + "-" + seconds(to), Notes: monitorNotes(zero, missing)}
	for _, row := range rows {
		if len(v.Groups) == 0 || v.Groups[len(v.Groups)-1].Label != row.Label {
			v.Groups = append(v.Groups, serverGroup{Label: row.Label})
		}
		g := &v.Groups[len(v.Groups)-1]
		g.Rows = append(g.Rows, serverRow{row.Metric,
			result.FormatMonitorValue(row.Unit, row.Min), result.FormatMonitorValue(row.Unit, row.Avg), result.FormatMonitorValue(row.Unit, row.Max)})
	}
	for _, p := range r.MonitorProblems {
		v.Problems = append(v.Problems, serverProblem{Error: p.Severity == "error", Monitor: p.Monitor, Message: p.Message, When: problemWhen(p)})
	}
	return v
}

// seconds writes a time on the run clock: "12s", "-0.8s".
func seconds(t float64) string {
	s := strconv.FormatFloat(t, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s + "s"
}
