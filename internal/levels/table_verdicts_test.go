package levels

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

// verdictLevel is a complete level judged by "p95 < 200ms", "error_rate <
// 1%" and "rps > 100", with the measured rate given.
func verdictLevel(users float64, rps string, rpsPass bool) result.Level {
	r := &result.Result{}
	r.Run.DurationS = 3
	r.Totals.Requests, r.Totals.Successful = 100, 100
	r.Totals.LatencyOK.Count, r.Totals.LatencyOK.P95US = 100, 41300
	slo := []result.Threshold{
		{Expr: "p95 < 200ms", Value: "41.3ms", Pass: true},
		{Expr: "error_rate < 1%", Value: "0%", Pass: true},
		{Expr: "rps > 100", Value: rps, Pass: rpsPass},
	}
	return result.Level{Vary: plan.VaryUsers, Value: users, SLO: slo, Pass: rpsPass, Result: r}
}

// tableRow is the cells of the text table's row that starts with metric
// (split on runs of two spaces or more, tabwriter's padding).
func tableRow(t *testing.T, text, metric string) []string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, metric+"  ") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(line[len(metric):], "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		return cells
	}
	t.Fatalf("no row %q in:\n%s", metric, text)
	return nil
}

// D2: a sweep that exits 1 shows why. Its table gave P95 and Requests
// Failed only, so a level that missed "rps > 100" failed the sweep with
// nothing on the screen saying so; it now shows each criterion's verdict
// with the measured value, and each level's verdict, as gates do.
func TestSweepTableShowsEachLevelsVerdicts(t *testing.T) {
	ls := []result.Level{
		verdictLevel(2, "32.64/s", false),
		verdictLevel(4, "64.1/s", false),
		verdictLevel(8, "120.5/s", true),
	}
	var out bytes.Buffer
	if err := WriteSweep(&out, ls, "text"); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	want := map[string][]string{
		"P95":             {"41.3ms", "41.3ms", "41.3ms"},
		"p95 < 200ms":     {"✓ 41.3ms", "✓ 41.3ms", "✓ 41.3ms"},
		"error_rate < 1%": {"✓ 0%", "✓ 0%", "✓ 0%"},
		"rps > 100":       {"✗ 32.64/s", "✗ 64.1/s", "✓ 120.5/s"},
		"Verdict":         {"FAIL", "FAIL", "PASS"},
	}
	for metric, cells := range want {
		if got := tableRow(t, text, metric); strings.Join(got, "|") != strings.Join(cells, "|") {
			t.Errorf("row %q: %q, want %q\n%s", metric, got, cells, text)
		}
	}
	// The rows the table had keep their place: P95, then Requests Failed.
	if lines := strings.Split(text, "\n"); !strings.HasPrefix(lines[1], "P95 ") || !strings.HasPrefix(lines[2], "Requests Failed ") {
		t.Errorf("first rows moved:\n%s", text)
	}
	var md bytes.Buffer
	if err := WriteSweep(&md, ls, "md"); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"| rps > 100 | ✗ 32.64/s | ✗ 64.1/s | ✓ 120.5/s |", "| Verdict | FAIL | FAIL | PASS |"} {
		if !strings.Contains(md.String(), line+"\n") {
			t.Errorf("markdown lacks %q:\n%s", line, md.String())
		}
	}
}

// A level judged by a criterion another level was not (an interrupted
// level has no verdicts) shows "-" there, and its verdict says why.
func TestSweepTableLevelWithoutVerdicts(t *testing.T) {
	cut := verdictLevel(4, "", false)
	cut.SLO = nil
	cut.Result.Run.Partial = true
	_, rows := SweepTable([]result.Level{verdictLevel(2, "120/s", true), cut})
	got := map[string]string{}
	for _, r := range rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, c.Text)
		}
		got[r.Metric] = strings.Join(cells, "|")
	}
	if got["rps > 100"] != "✓ 120/s|-" || got["Verdict"] != "PASS|INTERRUPTED" {
		t.Errorf("rows %q", got)
	}
}

// D3: a level whose generator lagged is not judged, so no table reads PASS
// for it: gates and capacity (one table) and the sweep say SUSPECT, and a
// suspect level that missed its criteria still says it failed (it counts,
// in the exit code), and that the failure is suspect.
func TestSuspectLevelNeverReadsPass(t *testing.T) {
	sus := verdictLevel(4, "120.5/s", true)
	sus.Suspect = "generator lag p99 12ms against a p95 of 41.3ms"
	susFail := verdictLevel(8, "64.1/s", false)
	susFail.Suspect = sus.Suspect
	ls := []result.Level{verdictLevel(2, "120/s", true), sus, susFail}
	var gates bytes.Buffer
	if err := WriteGates(&gates, plan.VaryUsers, []float64{2, 4, 8}, Criteria(&plan.Plan{}, []string{"p95 < 200ms", "error_rate < 1%", "rps > 100"}), ls, "text"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(gates.String()), "\n")
	for i, want := range []string{"PASS", "SUSPECT", "FAIL (suspect)"} {
		if len(lines) < 2+i || !strings.HasSuffix(strings.TrimSpace(lines[1+i]), "  "+want) {
			t.Errorf("gates row %d: want %s\n%s", i+1, want, gates.String())
		}
	}
	var sweep bytes.Buffer
	if err := WriteSweep(&sweep, ls, "text"); err != nil {
		t.Fatal(err)
	}
	if got := tableRow(t, sweep.String(), "Verdict"); strings.Join(got, "|") != "PASS|SUSPECT|FAIL (suspect)" {
		t.Errorf("sweep verdicts %q\n%s", got, sweep.String())
	}
}
