package report

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// The HTML report of a real sweep, opened in Chromium, heads the page with
// each level's own figures, one column per level and one for all levels,
// rather than the merged figures under the largest level's name.
func TestSweepHTMLHeadlinePerLevelInChromium(t *testing.T) {
	chromiumPath(t)
	dir := t.TempDir()
	res := filepath.Join(dir, "sweep.json")
	plan := filepath.Join(e2etest.ModRoot, "e2e", "report", "testdata", "small.yaml")
	// Two 1 s levels: a couple of minutes is a hang, not a slow machine.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := command(ctx, "sweep", plan, "--users", "2,4", "--hold", "1s", "-q", "-o", res).CombinedOutput(); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	r, err := result.Read(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Levels) != 2 {
		t.Fatalf("%d levels, want 2", len(r.Levels))
	}
	page := filepath.Join(dir, "sweep.html")
	if o := stampede(t, "report", res, "--format", "html", "-o", page); o.Code != 0 {
		t.Fatalf("report --format html: exit %d: %s", o.Code, o.Stderr)
	}
	pc := openInChromium(t, page, false, "report-sweep-light.png")
	if len(pc.Headline) < 3 {
		t.Fatalf("no per-level headline rendered: %q", pc.Headline)
	}
	if got, want := strings.Join(pc.Headline[0], "|"), "Metric|2 users|4 users|All levels"; got != want {
		t.Errorf("headline columns %q, want %q", got, want)
	}
	want := []string{"Requests"}
	for _, l := range r.Levels {
		if l.Result == nil || l.Result.Totals.Requests == 0 {
			t.Fatalf("level %v sent nothing", l.Value)
		}
		want = append(want, fmt.Sprint(l.Result.Totals.Requests))
	}
	want = append(want, fmt.Sprint(r.Totals.Requests))
	var found bool
	for _, row := range pc.Headline {
		if len(row) > 0 && row[0] == "Requests" {
			found = true
			if strings.Join(row, "|") != strings.Join(want, "|") {
				t.Errorf("requests row %q, want each level's own count %q", row, want)
			}
		}
	}
	if !found {
		t.Errorf("no Requests row in the headline %q", pc.Headline)
	}
}
