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
	charts, err := runCharts(r, r.Steps)
	if err != nil {
		return err
	}
	server := serverViewOf(r)
	if mc, left := monitorCharts(r); len(mc) > 0 {
		charts = append(charts, mc...)
		if server != nil {
			server.Uncharted = left
		}
	}
	shareTimeAxis(charts)
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
	}
	meta := func(k, val string) {
		if val != "" {
			sv.Meta = append(sv.Meta, kv{k, val})
		}
	}
	meta("Plan file", r.Plan.File)
	meta("Target", shownTarget(r.Plan.Target))
	meta("Model", modelLine(r))
	meta("Started", startedLine(r))
	meta("Duration", runDuration(r.Run.DurationS))
	if s := r.Run.Segment; s.Count > 1 {
		meta("Segment", fmt.Sprintf("%d of %d", s.Index+1, s.Count))
	}
	if r.Run.Partial {
		reason := r.Run.PartialReason
		if reason == "" {
			reason = "the run did not complete"
		}
		sv.Warnings = append(sv.Warnings, "Partial result: "+reason)
	}
	if r.Run.StopReason != "" {
		sv.Warnings = append(sv.Warnings, "Stopped early: "+r.Run.StopReason)
	}
	t := r.Totals
	sv.SummaryTitle = "Summary"
	if len(r.Levels) > 0 {
		if sv.Headline, err = headline(r); err != nil { // headline_levels.go
			return err
		}
		sv.SummaryTitle = "All levels"
	} else {
		sv.KPIs = []kpi{
			{"Requests", fmt.Sprint(t.Requests), fmt.Sprintf("%.2f req/s", throughput(r))},
			{"Successful", pct(t.Successful, t.Requests), fmt.Sprint(t.Successful)},
			{"Failed", pct(t.Failed, t.Requests), fmt.Sprint(t.Failed)},
			{"P50", latencyOrDash(v.ok, v.ok.P50US), "successful requests"},
			{"P95", latencyOrDash(v.ok, v.ok.P95US), "successful requests"},
			{"P99", latencyOrDash(v.ok, v.ok.P99US), "successful requests"},
		}
	}
	sv.Summary = []kv{
		{"Duration", runDuration(r.Run.DurationS)},
		{"Total Requests", fmt.Sprint(t.Requests)},
		{"Successful", fmt.Sprintf("%d (%s)", t.Successful, pct(t.Successful, t.Requests))},
		{"Failed", fmt.Sprintf("%d (%s)", t.Failed, pct(t.Failed, t.Requests))},
		{"Throughput", fmt.Sprintf("%.2f req/s", throughput(r))},
	}
	if t.Iterations > 0 {
		sv.Summary = append(sv.Summary, kv{"Iterations", fmt.Sprint(t.Iterations)})
	}
	for _, c := range presentClasses(t.ByClass) {
		sv.Errors = append(sv.Errors, kv{classTitle(c), fmt.Sprintf("%d (%s)", t.ByClass[c], pct(t.ByClass[c], t.Requests))})
	}
	lrow := func(label string, get func(result.Latency) int64) {
		sv.Latency = append(sv.Latency, latRow{label, latencyOrDash(v.ok, get(v.ok)), latencyOrDash(v.all, get(v.all))})
	}
	lrow("Min", func(l result.Latency) int64 { return l.MinUS })
	lrow("P50", func(l result.Latency) int64 { return l.P50US })
	lrow("P75", func(l result.Latency) int64 { return l.P75US })
	lrow("P90", func(l result.Latency) int64 { return l.P90US })
	lrow("P95", func(l result.Latency) int64 { return l.P95US })
	lrow("P99", func(l result.Latency) int64 { return l.P99US })
	lrow("P99.9", func(l result.Latency) int64 { return l.P999US })
	lrow("Max", func(l result.Latency) int64 { return l.MaxUS })
	lrow("Avg", func(l result.Latency) int64 { return int64(math.Round(l.AvgUS)) })
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
