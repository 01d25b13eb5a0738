package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// withConnections gives r a SignalR population and a WebSocket one that
// failed some of its attempts, and an open-connections series on r's
// intervals.
func withConnections(r *result.Result) *result.Result {
	r.Connections = &result.Connections{Scenarios: []result.ConnScenario{
		{Scenario: "kitchen-display", Protocol: "signalr", Target: 40, Attempts: 40, Opened: 40,
			ByClass: map[string]int64{}, PeakOpen: 40, OpenAtEnd: 38,
			Disconnects: map[string]int64{"client_close": 38, "server_close": 2},
			Pushes:      map[string]int64{"OrderPlaced": 1204, "OrderReady": 300}, OtherPushes: 7,
			MessagesIn: 1551, MessagesOut: 120, BytesIn: 160 << 10, BytesOut: 4711},
		{Scenario: "ticker", Protocol: "websocket", Target: 10, Attempts: 12, Opened: 9, Failed: 3,
			ByClass: map[string]int64{"conn_refused": 2, "timeout": 1}, PeakOpen: 9, OpenAtEnd: 0,
			Disconnects: map[string]int64{"ping_timeout": 9},
			MessagesIn:  90, MessagesOut: 90, BytesIn: 900, BytesOut: 900},
	}}
	r.Series.Connections = nil
	for i := range r.Series.T {
		r.Series.Connections = append(r.Series.Connections, int64(min(5*(i+1), 49)))
	}
	return r
}

type chartJSON struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Note   string     `json:"note"`
	Group  string     `json:"group"`
	X      string     `json:"x"`
	Xs     []float64  `json:"xs"`
	XRange []float64  `json:"xrange"`
	Axes   []axis     `json:"axes"`
	Series []lineJSON `json:"series"`
}

type lineJSON struct {
	Label string     `json:"label"`
	V     []*float64 `json:"v"`
}

// pageCharts reads back the chart data a page embeds.
func pageCharts(t *testing.T, page string) map[string]chartJSON {
	t.Helper()
	const open = "const STAMPEDE_CHARTS = "
	i := strings.Index(page, open)
	j := strings.Index(page[i:], ";</script>")
	if i < 0 || j < 0 {
		t.Fatal("page has no chart data")
	}
	var cs []chartJSON
	if err := json.Unmarshal([]byte(page[i+len(open):i+j]), &cs); err != nil {
		t.Fatal(err)
	}
	out := map[string]chartJSON{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

func (c chartJSON) line(label string) *lineJSON {
	for i := range c.Series {
		if c.Series[i].Label == label {
			return &c.Series[i]
		}
	}
	return nil
}

func values(l *lineJSON) string {
	var parts []string
	for _, v := range l.V {
		if v == nil {
			parts = append(parts, "null")
		} else {
			parts = append(parts, fmt.Sprint(*v))
		}
	}
	return strings.Join(parts, ",")
}

func TestHTMLConnectionsAndMonitors(t *testing.T) {
	r := withConnections(withMonitors(healthyClosed(t)))
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		// The connections table, figure for figure.
		`<section class="card" id="connections">`,
		`<tr><th>kitchen-display</th><td class="text">signalr</td><td>40</td><td>40</td><td class="text">0</td><td>40 of 40</td><td>38</td><td class="text">client_close 38, server_close 2</td><td class="text">OrderPlaced 1204, OrderReady 300, 7 to other targets</td><td>1551 (160.0 KB)</td><td>120 (4711 B)</td><td class="text">–</td></tr>`,
		`<tr><th>ticker</th><td class="text">websocket</td><td>12</td><td>9</td><td class="text">3 (1 timeouts, 2 conn refused)</td><td>9 of 10</td><td>0</td><td class="text">ping_timeout 9</td><td class="text">–</td><td>90 (900 B)</td><td>90 (900 B)</td><td class="text">–</td></tr>`,
		// The server table: the text summary's figures.
		`<section class="card" id="server">`,
		`<tr class="section"><th colspan="4">postgres</th></tr>`,
		`<tr><th>xact.commits_per_sec</th><td>1010/s</td><td>1020/s</td><td>1030/s</td></tr>`,
		`<tr><th>cpu_pct</th><td>19.0%</td><td>39.0%</td><td>59.0%</td></tr>`,
		`<tr><th>memory.used_bytes</th><td>3.0 MiB</td><td>3.0 MiB</td><td>3.0 MiB</td></tr>`,
		"Over the steady part of the run (9s-30s); 1 series at zero throughout not shown; 1 series without a sample in the steady part.",
		// Problems, as warnings.
		`<li class="warn"><span class="icon">⚠</span><span><strong>host</strong>: sample failed: boom <span class="muted">(30 times, 2.5s-31.5s)</span></span></li>`,
		`<section class="charts" id="charts-server"></section>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "process[self]") {
		t.Error("the generator's own process belongs to the Generator line, not the server section")
	}

	charts := pageCharts(t, page)
	conn, ok := charts["connections"]
	if !ok {
		t.Fatalf("no connections chart; charts %v", charts)
	}
	if got := values(conn.line("open")); !strings.HasPrefix(got, "5,10,15,20,25,30,35,40,45,49,49") {
		t.Errorf("open connections %s, want Series.Connections", got)
	}
	if got := values(conn.line("planned at peak")); !strings.HasPrefix(got, "50,50,") {
		t.Errorf("planned connections %s, want the scenarios' targets summed (50)", got)
	}

	// One chart per monitor and unit, in the server section, on the
	// monitors' own sample times.
	for id, want := range map[string][]string{
		"mon-postgres-count":            {"connections.active"},
		"mon-postgres-per-second":       {"xact.commits_per_sec"},
		"mon-postgres-db-replica-ratio": {"cache.hit_ratio"},
		"mon-process-nginx-percent":     {"cpu_pct"},
		"mon-redis-bytes":               {"memory.used_bytes"},
		"mon-host-value":                {"load1"},
	} {
		c, ok := charts[id]
		if !ok {
			t.Errorf("no chart %s", id)
			continue
		}
		var got []string
		for _, l := range c.Series {
			got = append(got, l.Label)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || c.Group != "server" {
			t.Errorf("chart %s: series %v in group %q, want %v in server", id, got, c.Group, want)
		}
	}
	if _, ok := charts["mon-process-self-percent"]; ok {
		t.Error("the generator's own process is charted")
	}
	// Zero throughout is left out, as in the table.
	if c := charts["mon-postgres-per-second"]; c.line("deadlocks_per_sec") != nil {
		t.Error("a series at zero throughout is charted")
	}
	pg := charts["mon-postgres-per-second"]
	if len(pg.Xs) != 34 || pg.Xs[0] != -0.5 || pg.Xs[33] != 32.5 {
		t.Errorf("postgres xs %v, want the samples' times -0.5..32.5", pg.Xs)
	}
	if got := values(pg.line("xact.commits_per_sec")); !strings.HasPrefix(got, "999.5,1000.5,1001.5,") {
		t.Errorf("commits %s, want the samples' values", got)
	}
	if pg.Axes[0].Unit != "/s" || charts["mon-redis-bytes"].Axes[0].Unit != "B" || charts["mon-process-nginx-percent"].Axes[0].Unit != "%" {
		t.Errorf("axis units: %v %v %v", pg.Axes, charts["mon-redis-bytes"].Axes, charts["mon-process-nginx-percent"].Axes)
	}
	// The monitors sample before and after the load, so every time chart
	// spans their times: one moment sits at one place on every chart.
	for id, c := range charts {
		if c.X != "time" {
			if c.XRange != nil {
				t.Errorf("chart %s (%s) has an x range", id, c.X)
			}
			continue
		}
		if len(c.XRange) != 2 || c.XRange[0] != -0.5 || c.XRange[1] != 32.5 {
			t.Errorf("chart %s x range %v, want [-0.5 32.5]", id, c.XRange)
		}
	}
}

// A result without connections or monitors (every result before them)
// renders the page it always did: no new sections and the same charts.
func TestHTMLWithoutConnectionsOrMonitors(t *testing.T) {
	r := withSeries(healthyClosed(t), 30, "timeout")
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, absent := range []string{`id="connections"`, `id="server"`, `id="charts-server"`, `"xrange"`, `"group"`, "Monitor problems"} {
		if strings.Contains(page, absent) {
			t.Errorf("page has %q", absent)
		}
	}
	var ids []string
	for _, c := range runChartsOf(t, r) {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "rps,latency,users,generator,distribution" {
		t.Errorf("charts %s", got)
	}
}

func runChartsOf(t *testing.T, r *result.Result) []chart {
	t.Helper()
	cs, err := runCharts(r, r.Steps)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Monitor problems alone (a monitor that never started) still get the
// section, with no table.
func TestHTMLMonitorProblemsOnly(t *testing.T) {
	r := withSeries(healthyClosed(t), 10, "")
	r.MonitorProblems = []result.MonitorProblem{{Monitor: "postgres", Severity: "error", Message: "cannot connect: password authentication failed for user xxxxx", T: -1}}
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<li class="error"><span class="icon">✗</span><span><strong>postgres</strong>: cannot connect: password authentication failed for user xxxxx <span class="muted">(at -1s)</span></span></li>`) {
		t.Errorf("page lacks the problem")
	}
	if strings.Contains(page, `<table class="num server">`) {
		t.Error("a table with no rows")
	}
}

// Many series: at most maxSeriesPerChart lines a chart (the largest), at
// most maxMonitorCharts charts, and the page names what it left out.
func TestMonitorChartsBounded(t *testing.T) {
	r := withSeries(healthyClosed(t), 10, "")
	r.Monitors = map[string]result.MonitorSeries{}
	for i := range 12 {
		r.Monitors[fmt.Sprintf("prometheus[node].m%02d", i)] = result.MonitorSeries{Unit: "", T: []float64{0, 1, 2}, V: []float64{1, float64(i + 1), 2}}
	}
	for i := range maxMonitorCharts + 2 {
		r.Monitors[fmt.Sprintf("redis[r%02d].ops_per_sec", i)] = result.MonitorSeries{Unit: "1/s", T: []float64{0, 1, 2}, V: []float64{1, 2, 3}}
	}
	charts, left := monitorCharts(r)
	if len(charts) != maxMonitorCharts {
		t.Fatalf("%d charts, want %d", len(charts), maxMonitorCharts)
	}
	if len(charts[0].Lines) != maxSeriesPerChart {
		t.Errorf("first chart (%s) has %d lines", charts[0].ID, len(charts[0].Lines))
	}
	// The smallest of the scrape's series, and the charts past the cap.
	want := []string{"prometheus[node].m00", "prometheus[node].m01", "prometheus[node].m02", "prometheus[node].m03"}
	for i := maxMonitorCharts - 1; i < maxMonitorCharts+2; i++ {
		want = append(want, fmt.Sprintf("redis[r%02d].ops_per_sec", i))
	}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("left out %v, want %v", left, want)
	}
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Not charted, to keep the charts readable: <code>prometheus[node].m00</code>") {
		t.Error("page does not say what it left out")
	}
}

func TestMarkdownConnectionsAndMonitors(t *testing.T) {
	r := withConnections(withMonitors(healthyClosed(t)))
	r.Connections.Scenarios[0].Scenario = "kitchen|display"
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| kitchen\\|display | signalr | 40 | 40 | 0 | 40 of 40 | 38 | client_close 38, server_close 2 | OrderPlaced 1204, OrderReady 300, 7 to other targets | 1551 (160.0 KB) | 120 (4711 B) |",
		"### Server metrics (steady part 9s-30s)",
		"| process[nginx] | cpu_pct | 19.0% | 39.0% | 59.0% |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareHTMLConnections(t *testing.T) {
	runs := compareRuns(t)
	withConnections(runs[1])
	c, err := Compare(runs, []string{"V1", "V2", "V1 again"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	cc, ok := pageCharts(t, b.String())["cmp-connections"]
	if !ok || len(cc.Series) != 1 || cc.Series[0].Label != "V2" || !strings.HasPrefix(values(&cc.Series[0]), "5,10,15,") {
		t.Errorf("comparison's connections chart: %+v", cc)
	}
	// Runs without connections keep the comparison's charts as they were.
	c, err = Compare(compareRuns(t), []string{"V1", "V2", "V1 again"})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := CompareHTML(&b, c); err != nil {
		t.Fatal(err)
	}
	if _, ok := pageCharts(t, b.String())["cmp-connections"]; ok {
		t.Error("a connections chart without connections")
	}
}
