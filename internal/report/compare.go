package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/stampede-load/stampede/internal/result"
)

// Comparison is two or more runs side by side, each judged against the
// first (the baseline). Build it with Compare and render it with
// CompareText, CompareMarkdown or CompareHTML.
type Comparison struct {
	Labels   []string
	Runs     []*result.Result
	Verdicts []Verdict // Verdicts[i] is run i's; Verdicts[0] is the baseline's
	// Judged are the verdicts as the output lists them: one per run after
	// the first, or one on the other side of repeats.
	Judged []JudgedSide
	Notes  []string // caveats about comparing these runs at all
	// MinEffect is the smallest change the verdicts counted (a share).
	MinEffect float64
	baselines int
	rows      []cmpRow
	figs      []figures
	// levelHead and levelRows are the classic load-test report's sweep table, present when
	// every run has levels: one column per level, then "(V1) P95",
	// "(V2) P95" … and "(V1) Requests Failed" … rows.
	levelHead []string
	levelRows [][]string
}

// cmpRow is one metric across the runs; Deltas[0] is always empty.
type cmpRow struct {
	Metric string
	Cells  []string
	Deltas []string
	// Section starts a new block of rows (per-step figures) under a title.
	Section string
}

// Options tune a comparison's verdict.
type Options struct {
	// MinEffect is the smallest change that counts, as a share of the
	// baseline's figure (0.05: 5 %); 0 means DefaultMinEffect.
	MinEffect float64
	// Baselines, when over 0, makes the comparison one of repeats: the
	// first Baselines runs are the baseline side and the rest the other
	// side (compare A1 A2 A3 --vs B1 B2 B3), judged as two samples of
	// runs. 0: the first run is the baseline, and every other run is
	// judged against it alone.
	Baselines int
}

// CompareWith builds the comparison of rs as opts say.
func CompareWith(rs []*result.Result, labels []string, opts Options) (*Comparison, error) {
	if len(rs) < 2 {
		return nil, errors.New("compare needs at least two results")
	}
	if opts.Baselines != 0 && (opts.Baselines < 2 || len(rs)-opts.Baselines < 2) {
		return nil, fmt.Errorf("repeats need at least two runs on each side (got %d and %d); compare one run against one without --vs", opts.Baselines, len(rs)-opts.Baselines)
	}
	if opts.MinEffect < 0 || opts.MinEffect >= 1 || math.IsNaN(opts.MinEffect) {
		return nil, fmt.Errorf("minimum effect %g: want a share from 0 to 1 (0.05 for 5 %%)", opts.MinEffect)
	}
	if opts.MinEffect == 0 {
		opts.MinEffect = DefaultMinEffect
	}
	if labels == nil {
		for i := range rs {
			labels = append(labels, fmt.Sprintf("run %d", i+1))
		}
	}
	if len(labels) != len(rs) {
		return nil, fmt.Errorf("%d labels for %d results", len(labels), len(rs))
	}
	for _, l := range labels {
		if strings.TrimSpace(l) == "" {
			return nil, errors.New("a label is empty")
		}
	}
	labels = uniqueLabels(labels)
	c := &Comparison{Labels: labels, Runs: rs, MinEffect: opts.MinEffect, baselines: opts.Baselines}
	for i, r := range rs {
		f, err := recompute(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", labels[i], err)
		}
		c.figs = append(c.figs, f)
	}
	c.judge()
	c.notes()
	c.buildRows()
	if err := c.buildLevels(); err != nil {
		return nil, err
	}
	return c, nil
}

// uniqueLabels suffixes a label's later uses ("a.json", "a.json#2"), so
// that comparing a file with itself, or two files of one name, needs no
// --labels: each column and verdict still names one run.
func uniqueLabels(labels []string) []string {
	out := make([]string, len(labels))
	seen := map[string]bool{}
	for i, l := range labels {
		name := l
		for n := 2; seen[name]; n++ {
			name = fmt.Sprintf("%s#%d", l, n)
		}
		seen[name] = true
		out[i] = name
	}
	return out
}

func (c *Comparison) notes() {
	base := c.Runs[0]
	for i, r := range c.Runs[1:] {
		l := c.Labels[i+1]
		if r.Run.Model != base.Run.Model {
			c.Notes = append(c.Notes, fmt.Sprintf("%s ran the %s model and %s the %s model: their latencies measure different things",
				c.Labels[0], base.Run.Model, l, r.Run.Model))
		}
		if r.Plan.SHA256 != base.Plan.SHA256 {
			c.Notes = append(c.Notes, fmt.Sprintf("%s used a different plan from %s (%s vs %s)", l, c.Labels[0], planID(r), planID(base)))
		}
		if r.Run.Partial {
			c.Notes = append(c.Notes, fmt.Sprintf("%s is a partial result", l))
		}
	}
	if base.Run.Partial {
		c.Notes = append(c.Notes, fmt.Sprintf("%s (the baseline) is a partial result", c.Labels[0]))
	}
}

func planID(r *result.Result) string {
	id := r.Plan.Name
	if sha := r.Plan.SHA256; sha != "" {
		if len(sha) > 12 {
			sha = sha[:12]
		}
		id += " " + sha
	}
	return strings.TrimSpace(id)
}

// buildRows lays out the comparison table: the whole runs, their failure
// classes, then their steps.
func (c *Comparison) buildRows() {
	c.totalRows()
	c.classRows()
	c.stepRows()
}

// addRow adds one row: a cell per run, and for every run after the first
// its change from the first (none without delta).
func (c *Comparison) addRow(section, metric string, cell func(i int) string, delta func(i int) string) {
	n := len(c.Runs)
	row := cmpRow{Metric: metric, Section: section, Cells: make([]string, n), Deltas: make([]string, n)}
	for i := range c.Runs {
		row.Cells[i] = cell(i)
		if i > 0 && delta != nil {
			row.Deltas[i] = delta(i)
		}
	}
	c.rows = append(c.rows, row)
}

// totalRows are the whole runs' load, duration, counts, throughput,
// latencies and failure rate.
func (c *Comparison) totalRows() {
	base := c.Runs[0]
	c.addRow("", "Load", func(i int) string { return c.Runs[i].Run.Model + ", " + loadLabel(c.Runs[i]) }, nil)
	c.addRow("", "Duration", func(i int) string { return runDuration(c.Runs[i].Run.DurationS) }, nil)
	c.addRow("", "Requests", func(i int) string { return fmt.Sprint(c.Runs[i].Totals.Requests) },
		func(i int) string { return countDelta(base.Totals.Requests, c.Runs[i].Totals.Requests) })
	c.addRow("", "Throughput", func(i int) string { return fmt.Sprintf("%.2f req/s", throughput(c.Runs[i])) },
		func(i int) string { return rateDelta(throughput(base), throughput(c.Runs[i]), "req/s") })
	lat := []struct {
		name string
		get  func(result.Latency) int64
	}{
		{"P50", func(l result.Latency) int64 { return l.P50US }},
		{"P95", func(l result.Latency) int64 { return l.P95US }},
		{"P99", func(l result.Latency) int64 { return l.P99US }},
	}
	for _, m := range lat {
		c.addRow("", m.name, func(i int) string { return latencyOrDash(c.figs[i].ok, m.get(c.figs[i].ok)) },
			func(i int) string { return durationDelta(c.figs[0].ok, c.figs[i].ok, m.get) })
	}
	c.addRow("", "Requests Failed", func(i int) string { return pct(c.Runs[i].Totals.Failed, c.Runs[i].Totals.Requests) },
		func(i int) string {
			return ppDelta(failRate(base.Totals.Requests, base.Totals.Failed), failRate(c.Runs[i].Totals.Requests, c.Runs[i].Totals.Failed))
		})
}

// classRows are the failures of each class any run had.
func (c *Comparison) classRows() {
	base := c.Runs[0]
	var maps []map[string]int64
	for _, r := range c.Runs {
		maps = append(maps, r.Totals.ByClass)
	}
	for _, cl := range presentClasses(maps...) {
		c.addRow("", classTitle(cl), func(i int) string {
			t := c.Runs[i].Totals
			return fmt.Sprintf("%d (%s)", t.ByClass[cl], pct(t.ByClass[cl], t.Requests))
		}, func(i int) string { return countDelta(base.Totals.ByClass[cl], c.Runs[i].Totals.ByClass[cl]) })
	}
}

// stepAt is one run's step of a name, if the run has it.
type stepAt struct {
	step result.Step
	lat  result.Latency
	ok   bool
}

// stepsByName matches steps by the name reports show, in the order they
// first appear across the runs.
func (c *Comparison) stepsByName() (order []string, byName map[string][]stepAt) {
	byName = map[string][]stepAt{}
	for i, r := range c.Runs {
		names := stepNames(r.Steps)
		for j, s := range r.Steps {
			if byName[names[j]] == nil {
				byName[names[j]] = make([]stepAt, len(c.Runs))
				order = append(order, names[j])
			}
			byName[names[j]][i] = stepAt{s, c.figs[i].steps[j], true}
		}
	}
	return order, byName
}

// stepRows are each step's p95 and failure rate; "-" for a run without
// the step.
func (c *Comparison) stepRows() {
	order, byName := c.stepsByName()
	for _, name := range order {
		at := byName[name]
		section := "Step " + name
		c.addRow(section, "P95", func(i int) string {
			if !at[i].ok {
				return "-"
			}
			return latencyOrDash(at[i].lat, at[i].lat.P95US)
		}, func(i int) string {
			if !at[0].ok || !at[i].ok {
				return ""
			}
			return durationDelta(at[0].lat, at[i].lat, func(l result.Latency) int64 { return l.P95US })
		})
		c.addRow(section, "Requests Failed", func(i int) string {
			if !at[i].ok {
				return "-"
			}
			return pct(at[i].step.Failed, at[i].step.Requests)
		}, func(i int) string {
			if !at[0].ok || !at[i].ok {
				return ""
			}
			return ppDelta(failRate(at[0].step.Requests, at[0].step.Failed), failRate(at[i].step.Requests, at[i].step.Failed))
		})
	}
}

func (c *Comparison) buildLevels() error {
	per := make([]map[string]levelFigures, len(c.Runs))
	var order []string
	seen := map[string]bool{}
	for i, r := range c.Runs {
		if len(r.Levels) == 0 {
			return nil
		}
		ls, err := levelsOf(r)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Labels[i], err)
		}
		per[i] = map[string]levelFigures{}
		for _, l := range ls {
			per[i][l.label] = l
			if !seen[l.label] {
				seen[l.label] = true
				order = append(order, l.label)
			}
		}
	}
	c.levelHead = append([]string{"Metric"}, order...)
	for _, m := range []struct {
		name string
		get  func(levelFigures) string
	}{
		{"P95", func(l levelFigures) string { return l.p95 }},
		{"Requests Failed", func(l levelFigures) string { return l.failed }},
	} {
		for i := range c.Runs {
			row := []string{"(" + c.Labels[i] + ") " + m.name}
			for _, label := range order {
				cell := ""
				if l, ok := per[i][label]; ok {
					cell = m.get(l)
				}
				row = append(row, cell)
			}
			c.levelRows = append(c.levelRows, row)
		}
	}
	return nil
}

// relative prints a change as a share of the baseline, or nothing when
// the baseline is zero and a share would be infinite.
func relative(from, to float64) string {
	if from == 0 {
		if to == 0 {
			return ""
		}
		return " (new)"
	}
	r := (to - from) / from * 100
	if math.Abs(r) < 10 {
		return fmt.Sprintf(" (%+.1f%%)", r)
	}
	return fmt.Sprintf(" (%+.0f%%)", r)
}

func countDelta(from, to int64) string {
	if from == to {
		return "±0"
	}
	return fmt.Sprintf("%+d", to-from) + relative(float64(from), float64(to))
}

func rateDelta(from, to float64, unit string) string {
	if math.Round(from*100) == math.Round(to*100) {
		return "±0"
	}
	return fmt.Sprintf("%+.2f %s", to-from, unit) + relative(from, to)
}

func durationDelta(a, b result.Latency, get func(result.Latency) int64) string {
	if a.Count == 0 || b.Count == 0 {
		return ""
	}
	from, to := get(a), get(b)
	if from == to {
		return "±0"
	}
	d := Duration(to - from)
	if to > from {
		d = "+" + d
	}
	return d + relative(float64(from), float64(to))
}

func ppDelta(from, to float64) string {
	if math.Round(from*10000) == math.Round(to*10000) {
		return "±0"
	}
	return fmt.Sprintf("%+.2f pp", (to-from)*100)
}

// table lays the rows out as cells: Metric, then each run and, after the
// baseline, its change against the baseline.
func (c *Comparison) table() (head []string, rows [][]string) {
	head = []string{"Metric", c.Labels[0]}
	for _, l := range c.Labels[1:] {
		head = append(head, l, "Δ "+l)
	}
	for _, r := range c.rows {
		metric := r.Metric
		if r.Section != "" {
			metric = r.Section + ": " + r.Metric
		}
		row := []string{metric, r.Cells[0]}
		for i := 1; i < len(r.Cells); i++ {
			row = append(row, r.Cells[i], r.Deltas[i])
		}
		rows = append(rows, row)
	}
	return head, rows
}

// CompareText writes the comparison as an aligned plain-text table and the
// verdicts with the findings behind them.
func CompareText(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Comparing %d runs against %s:\n", len(c.Runs), c.tableBaseline())
	for i, r := range c.Runs {
		fmt.Fprintf(&b, "  %s: %s\n", c.Labels[i], runLine(r))
	}
	b.WriteString("\n")
	head, rows := c.table()
	textTable(&b, head, rows)
	b.WriteString("\nLatencies are over successful requests.\n\n")
	if len(c.levelRows) > 0 {
		b.WriteString("Levels:\n")
		textTable(&b, c.levelHead, c.levelRows)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Verdict (noise-aware, against %s):\n", c.BaselineLabel())
	for _, j := range c.Judged {
		fmt.Fprintf(&b, "  %s: %s\n", j.Label, j.Verdict.Outcome)
		for _, f := range j.Verdict.Findings {
			fmt.Fprintf(&b, "    - %s\n", f)
		}
	}
	fmt.Fprintf(&b, "  %s\n", c.MethodLine())
	if lines := c.errorChangeLines(termMessage); len(lines) > 0 {
		fmt.Fprintf(&b, "\nErrors that appeared or vanished (against %s):\n", c.Labels[0])
		for _, l := range lines {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	if len(c.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// textTable aligns cells in columns two spaces apart.
func textTable(b *bytes.Buffer, head []string, rows [][]string) {
	widths := make([]int, len(head))
	for _, row := range append([][]string{head}, rows...) {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	line := func(row []string) {
		var l strings.Builder
		for i, cell := range row {
			l.WriteString(cell)
			if i < len(row)-1 {
				l.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	line(head)
	for _, row := range rows {
		line(row)
	}
}

// runLine identifies a run in one line: plan, start and verdict.
func runLine(r *result.Result) string {
	var parts []string
	if r.Plan.Name != "" {
		parts = append(parts, r.Plan.Name)
	}
	if s := startedLine(r); s != "" {
		parts = append(parts, "started "+s)
	}
	vd := verdictOf(r)
	if vd.State != "none" || r.Run.Partial {
		parts = append(parts, vd.Text)
	}
	return strings.Join(parts, ", ")
}

// CompareMarkdown writes the comparison table, the verdicts, and each
// run's full summary folded the classic load-test report's way.
func CompareMarkdown(w io.Writer, c *Comparison) error {
	var b bytes.Buffer
	title := c.Runs[0].Plan.Name
	if title == "" {
		title = strings.Join(c.Labels, " vs ")
	}
	fmt.Fprintf(&b, "# Load Test Comparison: %s\n\n", mdText(title))
	fmt.Fprintf(&b, "Against **%s**:\n\n", mdText(c.tableBaseline()))
	for i, r := range c.Runs {
		fmt.Fprintf(&b, "- **%s:** %s\n", mdText(c.Labels[i]), mdText(runLine(r)))
	}
	b.WriteString("\n")
	head, rows := c.table()
	mdTable(&b, head, rows)
	b.WriteString("\nLatencies are over successful requests.\n\n")
	if len(c.levelRows) > 0 {
		b.WriteString("### Levels\n\n")
		mdTable(&b, c.levelHead, c.levelRows)
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "### Verdict (against %s)\n\n", mdText(c.BaselineLabel()))
	for _, j := range c.Judged {
		fmt.Fprintf(&b, "- **%s: %s**\n", mdText(j.Label), j.Verdict.Outcome)
		for _, f := range j.Verdict.Findings {
			fmt.Fprintf(&b, "  - %s\n", mdText(f))
		}
	}
	fmt.Fprintf(&b, "\n%s\n\n", mdText(c.MethodLine()))
	if lines := c.errorChangeLines(0); len(lines) > 0 {
		fmt.Fprintf(&b, "### Errors that appeared or vanished (against %s)\n\n", mdText(c.Labels[0]))
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", mdText(l))
		}
		b.WriteString("\n")
	}
	if len(c.Notes) > 0 {
		b.WriteString("**Notes:**\n\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
		b.WriteString("\n")
	}
	for i, r := range c.Runs {
		full, err := textSummary(r)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Labels[i], err)
		}
		mdDetails(&b, c.Labels[i], full)
	}
	_, err := w.Write(bytes.TrimRight(b.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

// tableBaseline says what the table's changes are against: the first run,
// which with repeats is one run of the baseline's side.
func (c *Comparison) tableBaseline() string {
	if c.baselines == 0 {
		return c.Labels[0]
	}
	return fmt.Sprintf("%s (the table; the verdict is on %s)", c.Labels[0], c.BaselineLabel())
}

// MethodLine says in a sentence what the verdicts rest on and what
// counts as a change.
func (c *Comparison) MethodLine() string {
	unit := "per-second figures of each run, 99 % block-bootstrap intervals"
	if c.baselines > 0 {
		unit = "each run one sample, 99 % intervals over the runs"
	}
	me := minEffectText(c.MinEffect)
	return fmt.Sprintf("Method: %s; a change counts when its interval excludes no change and it is at least %s (--min-effect); no change needs the whole interval within ±%s; latencies are medians of the per-second percentiles; generator-bound seconds are left out.",
		unit, me, me)
}

// okHistograms decodes each run's successful-request histogram.
func (c *Comparison) okHistograms() ([]*hdr.Histogram, error) {
	out := make([]*hdr.Histogram, len(c.Runs))
	for i, r := range c.Runs {
		h, err := r.Totals.LatencyOK.Histogram()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Labels[i], err)
		}
		out[i] = h
	}
	return out, nil
}
