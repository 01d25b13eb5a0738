package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// D2: a sweep that exits 1 shows why. `rps > 100` cannot hold for two
// users who each wait 40ms for an answer and think 20ms (at most 50
// requests/s whatever the machine), so every level fails it; the table
// printed only P95 and Requests Failed, and exit 1 came with no reason on
// the screen. It now shows each criterion's verdict with the measured
// value and each level's verdict, as the gates table does.
func TestSweepTableShowsWhyItFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(40 * time.Millisecond)
	}))
	defer srv.Close()
	path := e2etest.WritePlan(t, fmt.Sprintf(`name: sweep-verdicts
target: %s
scenarios:
  s:
    steps:
      - name: GET item
        get: /items/1
      - think: 20ms
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 1}
thresholds: ["p95 < 10s", "error_rate < 1%%", "rps > 100"]
`, srv.URL), nil)
	dir := filepath.Dir(path)
	o := e2etest.Stampede(t, time.Minute, dir, "sweep", path, "--users", "1,2", "--hold", "1s",
		"-o", filepath.Join(dir, "sweep.json"), "-q")
	if o.Code != 1 {
		t.Fatalf("exit %d, want 1: rps > 100 fails at every level\n%s", o.Code, o)
	}
	row := func(metric string) []string {
		for _, line := range strings.Split(o.Stdout, "\n") {
			if rest, ok := strings.CutPrefix(line, metric+"  "); ok {
				var cells []string
				for _, c := range strings.Split(rest, "  ") {
					if c = strings.TrimSpace(c); c != "" {
						cells = append(cells, c)
					}
				}
				return cells
			}
		}
		t.Fatalf("no %q row\n%s", metric, o)
		return nil
	}
	rps, verdicts := row("rps > 100"), row("Verdict")
	if len(rps) != 2 || len(verdicts) != 2 {
		t.Fatalf("rps row %q, verdicts %q: want one cell per level\n%s", rps, verdicts, o)
	}
	for i := range 2 {
		if !strings.HasPrefix(rps[i], "✗ ") || !strings.HasSuffix(rps[i], "/s") {
			t.Errorf("level %d: rps > 100 cell %q, want ✗ with the measured rate\n%s", i+1, rps[i], o)
		}
		// FAIL, or FAIL (suspect) should this machine delay the generator.
		if !strings.HasPrefix(verdicts[i], "FAIL") {
			t.Errorf("level %d: verdict %q, want FAIL\n%s", i+1, verdicts[i], o)
		}
	}
	if p95 := row("p95 < 10s"); len(p95) != 2 || !strings.HasPrefix(p95[0], "✓ ") {
		t.Errorf("p95 < 10s row %q: want ✓ with the measured p95\n%s", p95, o)
	}
}
