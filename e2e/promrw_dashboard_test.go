package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// dashboard is the part of a Grafana dashboard JSON the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Name, Type string
			Query      any
		}
	}
	Panels []dashboardPanel
}

type dashboardPanel struct {
	Title   string
	Type    string
	Panels  []dashboardPanel // a row's
	Targets []struct {
		RefID   string `json:"refId"`
		Expr    string
		Instant bool
		// Interval is the query's min step; without one Grafana takes the
		// data source's scrape interval, 15 s by default.
		Interval string
	}
}

// TestGrafanaDashboardQueriesReturnData runs a real test through the
// binary into a real Prometheus, then every query of every panel of the
// shipped dashboard, its variables given as Grafana gives them: each
// must return data, and the run's total must be the result's.
func TestGrafanaDashboardQueriesReturnData(t *testing.T) {
	prom := startPrometheus(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: dash
target: %s
scenarios:
  reader:
    steps:
      - name: home
        get: /
      - name: gone
        get: /missing
      - think: 20ms
load:
  stages: [{duration: 6s, users: 3}]
`, target.URL), nil)
	res := filepath.Join(filepath.Dir(planPath), "r.json")
	out := e2etest.Stampede(t, 2*time.Minute, "", "run", planPath, "-q", "-o", res,
		"--output", "prometheus-rw="+prom+"/api/v1/write", "--label", "env=dash")
	if out.Code != 0 {
		t.Fatalf("run: %s", out)
	}
	// The generated id, as the run printed it.
	_, rest, ok := strings.Cut(out.Stderr, "streaming as testid=")
	testid, _, _ := strings.Cut(rest, " ")
	if !ok || testid == "" {
		t.Fatalf("no testid on stderr:\n%s", out.Stderr)
	}
	r := e2etest.ReadResult(t, res)
	if r.Run.TestID != testid {
		t.Errorf("the result's run.testid %q, the run streamed as %q", r.Run.TestID, testid)
	}

	d := loadDashboard(t)
	checkTestIDVariable(t, prom, d, testid)
	first, last, _ := promSpan(t, prom, fmt.Sprintf(`stampede_requests_total{testid=%q}`, testid))
	rangeS := int(last.Sub(first).Seconds()) + 2
	queries := 0
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				q, step := grafanaQuery(tg.Expr, tg.Interval, testid, rangeS)
				if strings.Contains(q, "$") {
					t.Errorf("panel %q %s: a variable the test does not know: %s", p.Title, tg.RefID, q)
					continue
				}
				queries++
				if n := panelQuery(t, prom, q, tg.Instant, first, last, step); n == 0 {
					t.Errorf("panel %q query %s returned no data: %s", p.Title, tg.RefID, q)
				}
			}
		}
	}
	walk(d.Panels)
	if queries < 10 {
		t.Errorf("%d panel queries, want the dashboard's every one", queries)
	}
	checkPanelValues(t, prom, d, r, testid, first, last)
}

// checkPanelValues: the panels show the run's figures, not merely some:
// the Requests stat is the result's total, the peak of active users is
// the result's, and the Requests/s line peaks near the result's mean
// throughput (with a 1 minute rate window a 6 s run peaked at a sixth of
// it, and lingered for a minute).
func checkPanelValues(t *testing.T, prom string, d dashboard, r *result.Result, testid string, first, last time.Time) {
	t.Helper()
	rangeS := int(last.Sub(first).Seconds()) + 2
	var total int64
	for _, s := range r.Steps {
		total += s.Requests
	}
	if got := panelValues(t, prom, d, "Requests (run total)", testid, rangeS, first, last); len(got) != 1 || got[0] != float64(total) {
		t.Errorf("the Requests stat: %v, the result %d", got, total)
	}
	if got := panelValues(t, prom, d, "Peak active users", testid, rangeS, first, last); len(got) != 1 || got[0] != float64(r.Run.MaxUsers) {
		t.Errorf("the Peak active users stat: %v, the result %d", got, r.Run.MaxUsers)
	}
	mean := float64(total) / r.Run.DurationS
	rates := panelValues(t, prom, d, "Requests/s", testid, rangeS, first, last)
	peak := slices.Max(append(rates, 0))
	if peak < mean/2 || peak > 3*mean {
		t.Errorf("the Requests/s panel peaks at %.1f; the result's mean is %.1f/s", peak, mean)
	}
}

// grafanaQuery is a panel query as Grafana sends it for a time range of
// rangeS seconds, and its step: $__interval is at least the min step
// (Grafana's own division of the range by the panel's width gives 1 s or
// less for a short run), and $__rate_interval is the larger of
// $__interval + min step and 4 × min step.
func grafanaQuery(expr, minStep, testid string, rangeS int) (string, time.Duration) {
	minD := 15 * time.Second
	if d, err := time.ParseDuration(minStep); err == nil && minStep != "" {
		minD = d
	}
	step := max(time.Second, minD)
	rate := max(step+minD, 4*minD)
	secs := func(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }
	return strings.NewReplacer("$testid", testid, "${testid}", testid, "$__rate_interval", secs(rate),
		"$__range", strconv.Itoa(rangeS)+"s", "$__interval", secs(step)).Replace(expr), step
}

// panelValues are the values of the first query of the panel titled
// title: an instant query's, or every point of a range query's lines.
func panelValues(t *testing.T, prom string, d dashboard, title, testid string, rangeS int, from, to time.Time) []float64 {
	t.Helper()
	for _, p := range d.Panels {
		if p.Title != title || len(p.Targets) == 0 {
			continue
		}
		tg := p.Targets[0]
		q, step := grafanaQuery(tg.Expr, tg.Interval, testid, rangeS)
		if tg.Instant {
			return promAt(t, prom, q, to)
		}
		var vs []float64
		for _, s := range promAPI(t, prom, "/api/v1/query_range", grafanaRange(q, from, to, step)) {
			for _, v := range s.Values {
				f, _ := strconv.ParseFloat(v[1].(string), 64)
				vs = append(vs, f)
			}
		}
		return vs
	}
	t.Fatalf("the dashboard has no panel %q", title)
	return nil
}

// grafanaRange are a range query's parameters as Grafana sends them: the
// time range widened to whole steps.
func grafanaRange(q string, from, to time.Time, step time.Duration) url.Values {
	return url.Values{"query": {q}, "start": {promTime(from.Truncate(step))}, "end": {promTime(to.Truncate(step).Add(step))},
		"step": {strconv.Itoa(int(step.Seconds()))}}
}

// loadDashboard reads the shipped Grafana dashboard.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "dashboards", "grafana", "stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// panelQuery runs one panel query as Grafana does, instant at the range's
// end or over the range, and counts the series it returns.
func panelQuery(t *testing.T, prom, q string, instant bool, from, to time.Time, step time.Duration) int {
	t.Helper()
	if instant {
		return len(promAPI(t, prom, "/api/v1/query", url.Values{"query": {q}, "time": {promTime(to)}}))
	}
	return len(promAPI(t, prom, "/api/v1/query_range", grafanaRange(q, from, to, step)))
}

// checkTestIDVariable: the dashboard's testid variable lists the run.
func checkTestIDVariable(t *testing.T, prom string, d dashboard, testid string) {
	t.Helper()
	for _, v := range d.Templating.List {
		if v.Name != "testid" {
			continue
		}
		q, _ := json.Marshal(v.Query)
		if !strings.Contains(string(q), "label_values(stampede_requests_total, testid)") {
			t.Fatalf("testid variable query %s", q)
		}
		resp, err := http.Get(prom + "/api/v1/label/testid/values?match[]=stampede_requests_total")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Data []string }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || !slices.Contains(out.Data, testid) {
			t.Errorf("testid values %v (%v), want %s", out.Data, err, testid)
		}
		return
	}
	t.Fatal("the dashboard has no testid variable")
}
