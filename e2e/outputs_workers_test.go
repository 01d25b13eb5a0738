package e2e

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestWorkersDashboardAndCSV: with --workers the coordinator streams the
// merge of the workers' checkpoints: the dashboard shows the run while it
// goes, and the CSV holds every interval of the merged result once, with
// the same counts.
func TestWorkersDashboardAndCSV(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: live-workers
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 20ms
load:
  stages: [{duration: 12s, users: 4}]
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	res, csvPath, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "series.csv"), filepath.Join(dir, "j.xml")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	p := e2etest.Start(t, "", nil, "run", planPath, "--workers", "2", "-o", res, "-q",
		"--dashboard="+addr, "--output", "csv="+csvPath, "--junit", junit)
	views, o := watchLive(t, "http://"+addr, p)
	if o.Code != 0 {
		t.Fatalf("run --workers: %s", o)
	}
	live := 0
	for _, v := range views {
		if !v.Final && len(v.Actual.T) > 0 {
			live++
		}
		if v.Planned == nil || len(v.Planned.T) == 0 || v.Planned.T[len(v.Planned.T)-1] != 12 {
			t.Fatalf("planned profile %+v, want the 12s stage", v.Planned)
		}
	}
	if live == 0 {
		t.Errorf("the dashboard never showed the run while it went (%d views)", len(views))
	}
	r := e2etest.ReadResult(t, res)
	if j, err := os.ReadFile(junit); err != nil || !strings.Contains(string(j), "<testsuite") {
		t.Errorf("--junit with --workers: %v\n%s", err, j)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows)-1 != len(r.Series.T) {
		t.Fatalf("%d CSV rows, the merged result has %d intervals", len(rows)-1, len(r.Series.T))
	}
	col := -1
	for i, h := range rows[0] {
		if h == "started" {
			col = i
		}
	}
	var sumCSV, sumRes int64
	for i, row := range rows[1:] {
		n, _ := strconv.ParseInt(row[col], 10, 64)
		sumCSV += n
		sumRes += r.Series.Started[i]
	}
	if sumCSV != sumRes || sumRes == 0 {
		t.Errorf("started per interval sum to %d in the CSV, %d in the result", sumCSV, sumRes)
	}
}
