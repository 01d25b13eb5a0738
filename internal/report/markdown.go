package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// Markdown writes the classic load-test report's report layout: a summary table whose column is
// named by the load ("40 users"), the per-step table, thresholds, the full
// terminal summary folded in a <details> block, and the indicators as a
// list. It renders on GitHub, GitLab and in most wikis.
func Markdown(w io.Writer, r *result.Result) error {
	v, err := recompute(r)
	if err != nil {
		return err
	}
	full, err := textSummary(r)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	title := r.Plan.Name
	if title == "" {
		title = "run"
	}
	fmt.Fprintf(&b, "# Load Test Results: %s\n\n", mdText(title))
	mdHeader(&b, r)

	head, err := headline(r) // headline_levels.go
	if err != nil {
		return err
	}
	mdTable(&b, head.Head, head.Rows)
	b.WriteString("\nLatencies are over successful requests.\n\n")

	if len(r.Steps) > 0 {
		b.WriteString("### Steps\n\n")
		var srows [][]string
		for _, s := range stepRows(r, v.steps) {
			srows = append(srows, []string{s.Name, s.Group, fmt.Sprint(s.Requests), s.SuccessPct, s.Failures, s.P50, s.P95, s.P99})
		}
		mdTable(&b, []string{"Step", "Group", "Requests", "Successful", "Failures", "P50", "P95", "P99"}, srows)
		b.WriteString("\n")
	}

	mdErrors(&b, r) // errors.go
	mdConnections(&b, r)
	mdWorkflow(&b, r) // workflow.go
	mdServer(&b, r)

	if err := mdLevels(&b, r); err != nil {
		return err
	}

	if len(r.Thresholds) > 0 {
		b.WriteString("### Thresholds\n\n")
		for _, t := range r.Thresholds {
			mdThreshold(&b, t)
		}
		b.WriteString("\n")
	}

	mdDetails(&b, headlineLabel(r), full)

	if len(r.Indicators) > 0 {
		b.WriteString("**Performance Indicators:**\n\n")
		for _, in := range r.Indicators {
			fmt.Fprintf(&b, "- %s %s\n", indicatorIcon(in), mdText(in.Message))
		}
	}
	_, err = w.Write(bytes.TrimRight(b.Bytes(), "\n"))
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	return err
}

func mdHeader(b *bytes.Buffer, r *result.Result) {
	item := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "- **%s:** %s\n", k, v)
		}
	}
	if r.Plan.File != "" {
		item("Plan", mdCodeSpan(r.Plan.File))
	}
	item("Target", mdText(shownTarget(r.Plan.Target)))
	item("Model", mdText(modelLine(r)))
	if s := startedLine(r); s != "" {
		item("Started", s+", ran "+runDuration(r.Run.DurationS))
	}
	if s := r.Run.Segment; s.Count > 1 {
		item("Segment", fmt.Sprintf("%d of %d", s.Index+1, s.Count))
	}
	if r.Run.Partial {
		reason := r.Run.PartialReason
		if reason == "" {
			reason = "the run did not complete"
		}
		item("Partial result", mdText(reason))
	}
	item("Stopped early", mdText(r.Run.StopReason))
	vd := verdictOf(r)
	item("Verdict", vd.mark()+" "+vd.Text)
	b.WriteString("\n")
}

func mdThreshold(b *bytes.Buffer, t result.Threshold) {
	mark := "✗"
	if t.Pass && t.Error == "" {
		mark = "✓"
	}
	expr := mdCodeSpan(t.Expr)
	switch {
	case t.Error != "":
		fmt.Fprintf(b, "- %s %s (error: %s)\n", mark, expr, mdText(t.Error))
	case t.Value != "":
		fmt.Fprintf(b, "- %s %s (measured %s)\n", mark, expr, mdText(t.Value))
	default:
		fmt.Fprintf(b, "- %s %s\n", mark, expr)
	}
}

// mdDetails folds a terminal summary the way the classic load-test report does.
func mdDetails(b *bytes.Buffer, summary, body string) {
	fmt.Fprintf(b, "<details>\n<summary>%s</summary>\n<pre>\n%s\n</pre>\n</details>\n\n", html.EscapeString(summary), html.EscapeString(body))
}

func indicatorIcon(in result.Indicator) string {
	if in.Severity == "info" {
		return "ℹ️"
	}
	return "⚠️"
}

// mdTable writes a GFM table. Every cell, the header's included, is
// given as plain text and goes through mdCell once, here: callers never
// escape a cell themselves. The columns listed in code are shown as code
// spans (error messages, which must read exactly as recorded).
func mdTable(b *bytes.Buffer, head []string, rows [][]string, code ...int) {
	line := func(cells []string, code []int) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + mdCell(c, slices.Contains(code, i)) + " |")
		}
		b.WriteString("\n")
	}
	line(head, nil)
	b.WriteString("|")
	for range head {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		line(r, code)
	}
}

// mdCell is the one rule for a table cell. GFM splits a row at every "|"
// that no backslash precedes before it parses anything else, and then
// takes one backslash off each `\|`, inside code spans too: so each "|"
// of the cell is written `\|` exactly once. A text cell is mdText (which
// writes its "|" that way); a code cell is mdCodeSpan with its "|"
// escaped for the table.
func mdCell(s string, code bool) string {
	if code {
		return strings.ReplaceAll(mdCodeSpan(s), "|", `\|`)
	}
	return mdText(s)
}

// mdText makes free text (step names, messages) safe inside Markdown, in
// a table cell or not: a "|" would split a table cell, "<" could open an
// HTML tag, a backslash would escape what follows it (a name's `\|`
// would lose its backslash), and a line break would end the table row.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "\r\n", " ", "\r", " ", "\n", " ")

func mdText(s string) string { return mdEscaper.Replace(s) }

// mdLineBreaks are the line breaks a code span shows as spaces (as
// CommonMark does); writing them so keeps a table row on one line.
var mdLineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")

// mdCodeSpan puts s in a CommonMark code span, which shows its text
// literally: no HTML escaping (a renderer escapes "<" and "&" in a code
// span itself) and no backslash escapes. Backticks stay as they are: the
// span is delimited by a run of backticks longer than any inside s, and
// padded with a space on each side where s starts or ends with a
// backtick, or with a space at both ends (one space each side is what a
// renderer strips). Outside a table only; mdCell escapes "|" for one.
func mdCodeSpan(s string) string {
	s = mdLineBreaks.Replace(s)
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '`' {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	fence := strings.Repeat("`", longest+1)
	first, last := s[0], s[len(s)-1]
	if first == '`' || last == '`' || (first == ' ' && last == ' ' && strings.Trim(s, " ") != "") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdLevels writes a multi-level run the way the classic load-test report's tables are laid
// out: one column per level, then each level's summary folded.
func mdLevels(b *bytes.Buffer, r *result.Result) error {
	if len(r.Levels) == 0 {
		return nil
	}
	t, err := levelsTable(r) // view.go
	if err != nil {
		return err
	}
	b.WriteString("### Levels\n\n")
	mdTable(b, t.Head, t.Rows)
	b.WriteString("\n")
	for i, l := range r.Levels {
		if l.Result == nil {
			continue
		}
		full, err := textSummary(l.Result)
		if err != nil {
			return fmt.Errorf("level %d: %w", i+1, err)
		}
		mdDetails(b, levelLabel(l), full)
	}
	return nil
}

// mdConnections writes the text summary's Connections lines as a table.
func mdConnections(b *bytes.Buffer, r *result.Result) {
	rows := connRows(r)
	if len(rows) == 0 {
		return
	}
	b.WriteString("### Connections\n\n")
	var cells, hubs [][]string
	for _, c := range rows {
		cells = append(cells, []string{c.Scenario, c.Protocol, c.Attempts, c.Opened, c.Failed, c.Peak, c.OpenAtEnd, c.Disconnects, c.Pushes, c.MessagesIn, c.MessagesOut, c.Retries})
		for _, h := range c.Hubs {
			hubs = append(hubs, []string{c.Scenario, h.URL, h.Opened, h.Failed, h.Peak, h.OpenAtEnd, h.Pushes})
		}
	}
	mdTable(b, []string{"Scenario", "Protocol", "Attempts", "Opened", "Failed", "Peak open", "Open at end", "Disconnects", "Pushes", "Messages in", "Messages out", "Retries"}, cells)
	b.WriteString("\n")
	if len(hubs) > 0 {
		b.WriteString("#### Hubs\n\n")
		mdTable(b, []string{"Scenario", "Hub", "Opened", "Failed", "Peak open", "Open at end", "Pushes"}, hubs)
		b.WriteString("\n")
	}
}

// mdServer writes the text summary's server table and monitor problems.
func mdServer(b *bytes.Buffer, r *result.Result) {
	v := serverViewOf(r)
	if v == nil {
		return
	}
	fmt.Fprintf(b, "### Server metrics (steady part %s)\n\n", v.Window)
	if len(v.Groups) > 0 {
		var cells [][]string
		for _, g := range v.Groups {
			for _, row := range g.Rows {
				cells = append(cells, []string{g.Label, row.Metric, row.Min, row.Avg, row.Max})
			}
		}
		mdTable(b, []string{"Monitor", "Metric", "Min", "Avg", "Max"}, cells)
		b.WriteString("\n")
	}
	if len(v.Notes) > 0 {
		fmt.Fprintf(b, "%s.\n\n", mdText(upperFirst(strings.Join(v.Notes, "; "))))
	}
	if len(v.Problems) > 0 {
		b.WriteString("**Monitor Problems:**\n\n")
		for _, p := range v.Problems {
			mark := "⚠️"
			if p.Error {
				mark = "✗"
			}
			fmt.Fprintf(b, "- %s %s: %s (%s)\n", mark, mdText(p.Monitor), mdText(p.Message), p.When)
		}
		b.WriteString("\n")
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
