package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// printedDashboard is the dashboard URL a run printed on stderr ("" until
// it has): the only way in, since the path holds the run's random token.
func printedDashboard(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if u, ok := strings.CutPrefix(line, "dashboard: "); ok && strings.HasPrefix(u, "http://") {
			return strings.TrimSpace(u)
		}
	}
	return ""
}

// waitDashboard waits for p to print its dashboard URL, which must be on
// addr, and returns it.
func waitDashboard(t *testing.T, p *e2etest.Proc, addr string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if u := printedDashboard(p.Stderr()); u != "" {
			if !strings.HasPrefix(u, "http://"+addr+"/") {
				t.Fatalf("dashboard at %s, want it on %s", u, addr)
			}
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dashboard URL printed:\n%s", p.Stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
