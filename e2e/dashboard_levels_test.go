package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// liveView is the part of the dashboard's /live these tests read.
type liveView struct {
	Seq     int  `json:"seq"`
	Final   bool `json:"final"`
	Planned *struct {
		Vary   string    `json:"vary"`
		T      []float64 `json:"t"`
		V      []float64 `json:"v"`
		Levels []float64 `json:"levels"`
	} `json:"planned"`
	Actual struct {
		T []float64 `json:"t"`
	} `json:"actual"`
	Levels []struct {
		Value float64 `json:"value"`
		State string  `json:"state"`
	} `json:"levels"`
	Current int `json:"current"`
}

// watchLive polls the dashboard's /live until the process exits, and
// returns every view it read from the first update on.
func watchLive(t *testing.T, base string, p *e2etest.Proc) (views []liveView, o e2etest.Outcome) {
	t.Helper()
	done := make(chan e2etest.Outcome, 1)
	go func() { done <- p.Wait(t, 120*time.Second) }()
	c := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case o = <-done:
			return views, o
		case <-time.After(100 * time.Millisecond):
		}
		// The printed URL holds the run's token; base is the address.
		u := printedDashboard(p.Stderr())
		if !strings.HasPrefix(u, base+"/") {
			continue // not printed yet
		}
		resp, err := c.Get(u + "/live")
		if err != nil {
			continue // not up yet, or gone at the end
		}
		var v liveView
		// Seq 0 is before the first update, which is when a page draws.
		if json.NewDecoder(resp.Body).Decode(&v) == nil && v.Seq > 0 {
			views = append(views, v)
		}
		resp.Body.Close()
	}
}

// TestDashboardSweepLevels: a sweep's dashboard plans every level from
// the start and shows the level running, then each level's verdict.
func TestDashboardSweepLevels(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: live-sweep
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 50ms
load:
  stages: [{duration: 1s, users: 1}]
`, target.URL), nil)
	res := filepath.Join(filepath.Dir(planPath), "r.json")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	p := e2etest.Start(t, "", nil, "sweep", planPath, "--users", "1,2", "--hold", "3s", "-o", res, "-q", "--dashboard="+addr)
	views, o := watchLive(t, "http://"+addr, p)
	if o.Code != 0 {
		t.Fatalf("sweep: %s", o)
	}
	if len(views) == 0 {
		t.Fatal("the dashboard's /live never answered")
	}
	for i, v := range views {
		if v.Planned == nil || len(v.Planned.Levels) != 2 || len(v.Planned.T) == 0 || v.Planned.T[len(v.Planned.T)-1] != 6 {
			t.Fatalf("view %d: planned %+v, want levels 1 and 2 over 6s from the first view", i, v.Planned)
		}
	}
	running := map[float64]bool{}
	for _, v := range views {
		if v.Current >= 0 && v.Current < len(v.Levels) && v.Levels[v.Current].State == "running" {
			running[v.Levels[v.Current].Value] = true
		}
	}
	if !running[1] || !running[2] {
		t.Errorf("levels seen running: %v, want 1 and 2", running)
	}
	last := views[len(views)-1]
	if len(last.Levels) == 2 && (last.Levels[0].State == "running" || last.Levels[0].State == "fail") {
		t.Errorf("the first level, ended and passed, shows %q", last.Levels[0].State)
	}
}

// TestDashboardCapacity: capacity takes --dashboard, and the page shows
// the rates tried as the search goes.
func TestDashboardCapacity(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: live-capacity
target: %s
scenarios:
  s:
    steps:
      - get: /
load:
  stages: [{duration: 1s, rate: 10/s}]
`, target.URL), nil)
	res := filepath.Join(filepath.Dir(planPath), "r.json")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	p := e2etest.Start(t, "", nil, "capacity", planPath, "--slo", "error_rate < 50%", "--start", "10", "--max", "20",
		"--step-hold", "2s", "--budget", "60s", "-o", res, "-q", "--dashboard="+addr)
	views, o := watchLive(t, "http://"+addr, p)
	// A busy machine that delays the generator makes the capacity
	// undetermined (exit 4), which says why; the page is what is tested.
	if o.Code != 0 && (o.Code != 4 || !strings.Contains(o.Stdout, "is suspect: generator lag")) {
		t.Fatalf("capacity: %s", o)
	}
	tried := 0
	for _, v := range views {
		if v.Planned == nil || v.Planned.Vary != "rate" {
			t.Fatalf("planned %+v, want a rate profile", v.Planned)
		}
		tried = max(tried, len(v.Levels))
	}
	if tried == 0 {
		t.Errorf("no rate tried ever showed on the dashboard (%d views)", len(views))
	}
}

// TestDashboardGatesJudgedAndFinal: a page watching gates sees the running
// level judged by the plan's thresholds (it said "no thresholds (partial
// result)" until a level ended), and the final report reaches it before
// the process exits.
func TestDashboardGatesJudgedAndFinal(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: live-gates
target: %s
scenarios:
  s:
    steps:
      - get: /
      - think: 50ms
load:
  stages: [{duration: 1s, users: 1}]
thresholds: ["p99 < 10s"]
gates:
  vary: users
  levels: [1, 2]
  hold: 2s
  slo: ["error_rate < 50%%"]
`, target.URL), nil)
	res := filepath.Join(filepath.Dir(planPath), "r.json")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	p := e2etest.Start(t, "", nil, "gates", planPath, "-o", res, "-q", "--dashboard="+addr)
	u := waitDashboard(t, p, addr)
	var events *http.Response
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(u + "/events?page=1")
		if err == nil && resp.StatusCode == http.StatusOK {
			events = resp
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard's events never answered: %v", err)
		}
	}
	defer events.Body.Close()
	report := func() (string, bool) {
		resp, err := http.Get(u + "/report")
		if err != nil {
			t.Fatalf("report: %v (the server is gone)", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.Header.Get("X-Stampede-Final") == "1"
	}
	sc := bufio.NewScanner(events.Body)
	sawRunning := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		html, final := report()
		if !final && !sawRunning {
			sawRunning = true
			if strings.Contains(html, "no thresholds") || !strings.Contains(html, "p99 &lt; 10s") {
				t.Errorf("the first level's page is not judged by the plan's threshold")
			}
		}
		if strings.Contains(line, `"final":true`) {
			if !final || !strings.Contains(html, "users 2: p99 &lt; 10s") {
				t.Errorf("the final report (final %v) lacks the last level's verdicts", final)
			}
			break
		}
	}
	if o := p.Wait(t, 2*time.Minute); o.Code != 0 {
		t.Fatalf("gates: %s", o)
	}
	if !sawRunning {
		t.Error("no update came before the final one")
	}
}
