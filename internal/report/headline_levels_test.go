package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// levelFiguresOf are the figures a level's own column must show.
func levelFiguresOf(t *testing.T, r *result.Result) (requests, p95, failed string) {
	t.Helper()
	ok, err := r.Totals.LatencyOK.Recompute()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(r.Totals.Requests), Duration(ok.P95US), pct(r.Totals.Failed, r.Totals.Requests)
}

// The headline of a run of several levels shows each level's own figures
// in its own column, and the merged figures only under "All levels", in
// the text summary as in Markdown; the run is named by its levels, not by
// one level's users.
func TestTextHeadlinePerLevel(t *testing.T) {
	r := sweep(t, 1, 200)
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "up to") || !strings.Contains(out, "Model: closed, 3 levels: 100, 1000, 10000 users") {
		t.Errorf("the model line names one level's load, not the levels:\n%s", out)
	}
	lines := strings.Split(out, "\n")
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, name+" ") {
				return f
			}
		}
		t.Fatalf("no %q row in the headline:\n%s", name, out)
		return nil
	}
	head := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[indexOf(t, lines, "Metric ")]), -1)
	if want := []string{"Metric", "100 users", "1000 users", "10000 users", "All levels"}; strings.Join(head, "|") != strings.Join(want, "|") {
		t.Fatalf("headline columns %q, want %q", head, want)
	}
	reqs, p95s, fails := row("Requests"), row("P95"), row("Requests Failed")[1:] // a two-word name
	if len(reqs) != len(head) || len(p95s) != len(head) || len(fails) != len(head) {
		t.Fatalf("headline rows %q, %q, %q do not have the %d columns of %q", reqs, p95s, fails, len(head), head)
	}
	for i, l := range append(append([]result.Level{}, r.Levels...), result.Level{Result: r}) {
		n, p95, failed := levelFiguresOf(t, l.Result)
		col := i + 1
		if fails[col] != failed {
			t.Errorf("column %s: failed %s, want %s", head[col], fails[col], failed)
		}
		if reqs[col] != n || p95s[col] != p95 {
			t.Errorf("column %s: requests %s, p95 %s; want its own %s, %s", head[col], reqs[col], p95s[col], n, p95)
		}
	}
	if strings.Contains(out, "Total Requests:") {
		t.Errorf("a level run's text summary still has the one-run summary lines of merged figures:\n%s", out)
	}
}

func indexOf(t *testing.T, lines []string, prefix string) int {
	t.Helper()
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	t.Fatalf("no line starts with %q", prefix)
	return -1
}

// The HTML report of a run of several levels heads the page with a table
// of each level's own figures in place of the merged figures' cards, and
// titles the merged summary "All levels".
func TestHTMLHeadlinePerLevel(t *testing.T) {
	r := sweep(t, 1, 200)
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	start := strings.Index(page, `<section class="card" id="headline">`)
	if start < 0 {
		t.Fatal("no per-level headline on the page")
	}
	sec := page[start:]
	sec = sec[:strings.Index(sec, "</section>")]
	if !strings.Contains(sec, "<th>Metric</th><th>100 users</th><th>1000 users</th><th>10000 users</th><th>All levels</th>") {
		t.Errorf("headline columns wrong:\n%s", sec)
	}
	var reqs, p95s []string
	for _, l := range append(append([]result.Level{}, r.Levels...), result.Level{Result: r}) {
		n, p95, _ := levelFiguresOf(t, l.Result)
		reqs, p95s = append(reqs, "<td>"+n+"</td>"), append(p95s, "<td>"+p95+"</td>")
	}
	for _, want := range []string{"<tr><th>Requests</th>" + strings.Join(reqs, "") + "</tr>", "<tr><th>P95</th>" + strings.Join(p95s, "") + "</tr>"} {
		if !strings.Contains(sec, want) {
			t.Errorf("headline lacks %s:\n%s", want, sec)
		}
	}
	if strings.Contains(page, `class="kpi"`) {
		t.Error("the page still shows the merged figures as the run's headline cards")
	}
	if !strings.Contains(page, "<h2>All levels</h2>") {
		t.Error("the merged summary is not titled All levels")
	}
	if strings.Contains(page, "up to 20 users") {
		t.Error("the page names the run by one level's users")
	}
	// A single run keeps its cards.
	b.Reset()
	if err := HTML(&b, healthyClosed(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `class="kpi"`) || strings.Contains(b.String(), `id="headline"`) {
		t.Error("a single run's page lost its headline cards")
	}
}
