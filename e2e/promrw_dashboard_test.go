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
	var total int64
	for _, s := range r.Steps {
		total += s.Requests
	}

	b, err := os.ReadFile(filepath.Join("..", "dashboards", "grafana", "stampede.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	checkTestIDVariable(t, prom, d, testid)
	first, last, _ := promSpan(t, prom, fmt.Sprintf(`stampede_requests_total{testid=%q}`, testid))
	rangeS := int(last.Sub(first).Seconds()) + 2
	vars := strings.NewReplacer("$testid", testid, "${testid}", testid, "$__rate_interval", "1m", "$__range", strconv.Itoa(rangeS)+"s")
	queries := 0
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				q := vars.Replace(tg.Expr)
				if strings.Contains(q, "$") {
					t.Errorf("panel %q %s: a variable the test does not know: %s", p.Title, tg.RefID, q)
					continue
				}
				queries++
				if n := panelQuery(t, prom, q, tg.Instant, first, last); n == 0 {
					t.Errorf("panel %q query %s returned no data: %s", p.Title, tg.RefID, q)
				}
			}
		}
	}
	walk(d.Panels)
	if queries < 10 {
		t.Errorf("%d panel queries, want the dashboard's every one", queries)
	}
	if got := promAt(t, prom, vars.Replace(`sum(max_over_time(stampede_requests_total{testid=~"$testid"}[$__range]))`), last); len(got) != 1 || got[0] != float64(total) {
		t.Errorf("the Requests stat: %v, the result %d", got, total)
	}
}

// panelQuery runs one panel query as Grafana does, instant at the range's
// end or over the range, and counts the series it returns.
func panelQuery(t *testing.T, prom, q string, instant bool, from, to time.Time) int {
	t.Helper()
	if instant {
		return len(promAPI(t, prom, "/api/v1/query", url.Values{"query": {q}, "time": {promTime(to)}}))
	}
	return len(promAPI(t, prom, "/api/v1/query_range", url.Values{"query": {q}, "start": {promTime(from)}, "end": {promTime(to)}, "step": {"1"}}))
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
