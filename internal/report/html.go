package report

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/stampede-load/stampede/internal/result"
)

// The chart library and the page's own script and styles are embedded so a
// report is one file that opens from disk with no network at all.
//
//go:embed assets/uPlot.iife.min.js assets/uPlot.min.css assets/report.js assets/report.css assets/report.html.tmpl
var assets embed.FS

var page = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"outcomeClass": func(o Outcome) string {
		if o == WithinNoise || o == NotJudged {
			return "noise"
		}
		return string(o)
	},
}).ParseFS(assets, "assets/report.html.tmpl"))

func asset(name string) string {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded at build time: missing means a broken build
	}
	return string(b)
}

// pageData is everything the template shows; Single or Compare is set.
type pageData struct {
	Title   string
	Single  *singleView
	Compare *compareView
	Charts  []chart
	Footer  string

	UPlotJS, ReportJS template.JS
	UPlotCSS, PageCSS template.CSS
	ChartsJSON        template.JS
}

type kpi struct{ Label, Value, Sub string }

type kv struct{ Key, Value string }

type singleView struct {
	Verdict  verdict
	Meta     []kv
	Warnings []string // partial result, stopped early
	KPIs     []kpi
	// Headline replaces the KPIs for a run of several levels: each
	// level's own figures, and the Summary card is then all levels'.
	Headline     *plainTable
	SummaryTitle string
	Summary      []kv
	Errors       []kv
	Steps        []stepRow
	Latency      []latRow
	Thresholds   []result.Threshold
	Indicators   []result.Indicator
	Generator    string
	ErrorRows    []errorRow
	Statuses     []kv
	TextSummary  string
	Levels       *plainTable
	Conns        []connRow
	Server       *serverView
	Workflow     *workflowView // workflow.go
}

// plainTable is a header row and rows of text, for the levels tables.
type plainTable struct {
	Head []string
	Rows [][]string
}

type latRow struct{ Label, OK, All string }

type compareView struct {
	Runs     []cmpRun
	Head     []string
	Rows     []cmpHTMLRow
	Notes    []string
	Baseline string
	// ErrorChanges are the failure messages that appeared or vanished.
	ErrorChanges []string
	Levels       *plainTable
	// Judged are the verdicts; Method says what they rest on.
	Judged         []JudgedSide
	VerdictAgainst string
	Method         string
}

type cmpRun struct {
	Label, Color, Line, Summary string
	Verdict                     Verdict
}

type cmpHTMLRow struct {
	Section string
	Metric  string
	Cells   []cmpCell
}

type cmpCell struct {
	Value, Delta string
}

// HTML writes a self-contained report page: header, the classic load-test report's summary,
// per-step table, charts over time and the latency distribution.
func HTML(w io.Writer, r *result.Result) error {
	v, err := recompute(r)
	if err != nil {
		return err
	}
	full, err := textSummary(r)
	if err != nil {
		return err
	}
	charts, server, err := chartsOf(r)
	if err != nil {
		return err
	}
	sv := &singleView{
		Conns:       connRows(r),
		Workflow:    workflowOf(r),
		Server:      server,
		Verdict:     verdictOf(r),
		Thresholds:  r.Thresholds,
		Indicators:  r.Indicators,
		ErrorRows:   errorRows(r),
		Statuses:    statusRows(r),
		TextSummary: full,
		Steps:       stepRows(r, v.steps),
		Meta:        metaOf(r),
		Warnings:    warningsOf(r),
		Summary:     summaryOf(r),
		Errors:      classesOf(r.Totals),
		Latency:     latencyRows(v),
	}
	if err := sv.headlineOf(r, v); err != nil {
		return err
	}
	if sv.Levels, err = levelsTable(r); err != nil { // view.go
		return err
	}
	var gb bytes.Buffer
	generator(&gb, r.Generator, v.lag)
	sv.Generator = string(bytes.TrimSpace(bytes.TrimPrefix(gb.Bytes(), []byte("Generator:"))))

	title := r.Plan.Name
	if title == "" {
		title = "stampede run"
	}
	return render(w, pageData{Title: title, Single: sv, Charts: charts, Footer: footer(r)})
}

// chartsOf is the run's charts, the server monitors' among them, on one
// time axis, and the server section, which lists the monitors no chart
// shows.
func chartsOf(r *result.Result) ([]chart, *serverView, error) {
	charts, err := runCharts(r, r.Steps)
	if err != nil {
		return nil, nil, err
	}
	server := serverViewOf(r)
	if mc, left := monitorCharts(r); len(mc) > 0 {
		charts = append(charts, mc...)
		if server != nil {
			server.Uncharted = left
		}
	}
	shareTimeAxis(charts)
	return charts, server, nil
}

// metaOf is the header's facts about the run; empty ones are left out.
func metaOf(r *result.Result) []kv {
	var meta []kv
	add := func(k, val string) {
		if val != "" {
			meta = append(meta, kv{k, val})
		}
	}
	add("Plan file", r.Plan.File)
	add("Target", shownTarget(r.Plan.Target))
	add("Model", modelLine(r))
	add("Started", startedLine(r))
	add("Duration", runDuration(r.Run.DurationS))
	if s := r.Run.Segment; s.Count > 1 {
		add("Segment", fmt.Sprintf("%d of %d", s.Index+1, s.Count))
	}
	return meta
}

// warningsOf says when the run is partial or stopped early.
func warningsOf(r *result.Result) []string {
	var warnings []string
	if r.Run.Partial {
		reason := r.Run.PartialReason
		if reason == "" {
			reason = "the run did not complete"
		}
		warnings = append(warnings, "Partial result: "+reason)
	}
	if r.Run.StopReason != "" {
		warnings = append(warnings, "Stopped early: "+r.Run.StopReason)
	}
	return warnings
}

// headlineOf sets the summary's title and its headline: the levels' for
// a multi-level run, else the whole run's key figures.
func (sv *singleView) headlineOf(r *result.Result, v figures) error {
	sv.SummaryTitle = "Summary"
	if len(r.Levels) > 0 {
		var err error
		if sv.Headline, err = headline(r); err != nil { // headline_levels.go
			return err
		}
		sv.SummaryTitle = "All levels"
		return nil
	}
	t := r.Totals
	sv.KPIs = []kpi{
		{"Requests", fmt.Sprint(t.Requests), fmt.Sprintf("%.2f req/s", throughput(r))},
		{"Successful", pct(t.Successful, t.Requests), fmt.Sprint(t.Successful)},
		{"Failed", pct(t.Failed, t.Requests), fmt.Sprint(t.Failed)},
		{"P50", latencyOrDash(v.ok, v.ok.P50US), "successful requests"},
		{"P95", latencyOrDash(v.ok, v.ok.P95US), "successful requests"},
		{"P99", latencyOrDash(v.ok, v.ok.P99US), "successful requests"},
	}
	return nil
}

// summaryOf is the summary table's counts.
func summaryOf(r *result.Result) []kv {
	t := r.Totals
	summary := []kv{
		{"Duration", runDuration(r.Run.DurationS)},
		{"Total Requests", fmt.Sprint(t.Requests)},
		{"Successful", fmt.Sprintf("%d (%s)", t.Successful, pct(t.Successful, t.Requests))},
		{"Failed", fmt.Sprintf("%d (%s)", t.Failed, pct(t.Failed, t.Requests))},
		{"Throughput", fmt.Sprintf("%.2f req/s", throughput(r))},
	}
	if t.Iterations > 0 {
		summary = append(summary, kv{"Iterations", fmt.Sprint(t.Iterations)})
	}
	return summary
}

// classesOf is each failure class's count and share of the requests.
func classesOf(t result.Totals) []kv {
	var out []kv
	for _, c := range presentClasses(t.ByClass) {
		out = append(out, kv{classTitle(c), fmt.Sprintf("%d (%s)", t.ByClass[c], pct(t.ByClass[c], t.Requests))})
	}
	return out
}

// latencyRows is the latency table: successful and all requests.
func latencyRows(v figures) []latRow {
	var rows []latRow
	add := func(label string, get func(result.Latency) int64) {
		rows = append(rows, latRow{label, latencyOrDash(v.ok, get(v.ok)), latencyOrDash(v.all, get(v.all))})
	}
	add("Min", func(l result.Latency) int64 { return l.MinUS })
	add("P50", func(l result.Latency) int64 { return l.P50US })
	add("P75", func(l result.Latency) int64 { return l.P75US })
	add("P90", func(l result.Latency) int64 { return l.P90US })
	add("P95", func(l result.Latency) int64 { return l.P95US })
	add("P99", func(l result.Latency) int64 { return l.P99US })
	add("P99.9", func(l result.Latency) int64 { return l.P999US })
	add("Max", func(l result.Latency) int64 { return l.MaxUS })
	add("Avg", func(l result.Latency) int64 { return int64(math.Round(l.AvgUS)) })
	return rows
}

// CompareHTML writes the comparison as a self-contained page with the
// runs' charts overlaid on one time axis.
func CompareHTML(w io.Writer, c *Comparison) error {
	charts, err := compareCharts(c)
	if err != nil {
		return err
	}
	cv := &compareView{Notes: c.Notes, Baseline: c.Labels[0], ErrorChanges: c.errorChangeLines(0),
		Judged: c.Judged, VerdictAgainst: c.BaselineLabel(), Method: c.MethodLine()}
	if len(c.levelRows) > 0 {
		cv.Levels = &plainTable{Head: c.levelHead, Rows: c.levelRows}
	}
	for i, r := range c.Runs {
		full, err := textSummary(r)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Labels[i], err)
		}
		cv.Runs = append(cv.Runs, cmpRun{Label: c.Labels[i], Color: runColor(i), Line: runLine(r), Summary: full, Verdict: c.Verdicts[i]})
	}
	cv.Head = []string{"Metric"}
	cv.Head = append(cv.Head, c.Labels...)
	for _, row := range c.rows {
		hr := cmpHTMLRow{Section: row.Section, Metric: row.Metric}
		for i := range row.Cells {
			hr.Cells = append(hr.Cells, cmpCell{row.Cells[i], row.Deltas[i]})
		}
		cv.Rows = append(cv.Rows, hr)
	}
	title := c.Runs[0].Plan.Name
	if title == "" {
		title = "stampede"
	}
	return render(w, pageData{Title: title + " — comparison", Compare: cv, Charts: charts, Footer: footer(c.Runs[0])})
}

func footer(r *result.Result) string {
	name := r.Tool.Name
	if name == "" {
		name = "stampede"
	}
	s := "Generated by " + name
	if r.Tool.Version != "" {
		s += " " + r.Tool.Version
	}
	return s + " from " + result.Schema + " results. Figures are recomputed from the HDR histograms."
}

func render(w io.Writer, d pageData) error {
	data, err := json.Marshal(d.Charts)
	if err != nil {
		return fmt.Errorf("encode charts: %w", err)
	}
	// json.Marshal escapes <, > and & as \u003c…, so the data cannot end
	// the <script> element it sits in.
	d.ChartsJSON = template.JS(data)
	d.UPlotJS = template.JS(asset("uPlot.iife.min.js"))
	d.ReportJS = template.JS(asset("report.js"))
	d.UPlotCSS = template.CSS(asset("uPlot.min.css"))
	d.PageCSS = template.CSS(asset("report.css"))
	var b bytes.Buffer
	if err := page.Execute(&b, d); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}
