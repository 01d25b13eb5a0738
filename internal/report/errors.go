package report

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/result"
)

// errorRow is one line of the Errors table: a distinct failure message of
// a step, or the step's messages that were not kept ("other messages").
type errorRow struct {
	Count   int64
	Pct     string // of the step's requests
	Step    string
	Class   string
	Status  int
	Message string
	Other   bool
}

// termErrorRows and termMessage keep the terminal's Errors table to a
// screen: the JSON has every kept message in full.
const (
	termErrorRows = 15
	termMessage   = 90
)

// errorRows lists the run's failure messages, most frequent first. A
// result written before steps kept their messages has only the flat error
// samples; those are shown instead, without percentages they cannot back.
func errorRows(r *result.Result) []errorRow {
	names := stepNames(r.Steps)
	var rows []errorRow
	perStep := false
	for i, s := range r.Steps {
		for _, e := range s.Errors {
			perStep = true
			rows = append(rows, errorRow{Count: e.Count, Pct: pct(e.Count, s.Requests), Step: names[i], Class: e.Class, Status: e.Status, Message: e.Message})
		}
		var other int64
		var classes []string
		for c, n := range s.OtherErrors {
			if n > 0 {
				other += n
				classes = append(classes, c)
			}
		}
		if other > 0 {
			perStep = true
			sort.Strings(classes)
			rows = append(rows, errorRow{Count: other, Pct: pct(other, s.Requests), Step: names[i], Class: strings.Join(classes, ", "),
				Message: "(other messages, not kept)", Other: true})
		}
	}
	if !perStep {
		for _, e := range r.Samples {
			rows = append(rows, errorRow{Count: e.Count, Pct: "-", Step: e.Step, Class: e.Class, Message: e.Message})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Count != rows[j].Count {
			return rows[i].Count > rows[j].Count
		}
		return rows[i].Step < rows[j].Step
	})
	return rows
}

// shorten cuts a message to n characters with "…".
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

// errorTable writes the terminal's Errors table: what the server and the
// network actually said, most frequent first.
func errorTable(b *bytes.Buffer, r *result.Result) {
	rows := errorRows(r)
	if len(rows) == 0 {
		return
	}
	b.WriteString("Errors:\n")
	shown := rows[:min(len(rows), termErrorRows)]
	cw, pw, sw, kw := len("Count"), len("% step"), len("Step"), len("Class")
	for _, e := range shown {
		cw = max(cw, len(fmt.Sprint(e.Count)))
		pw = max(pw, len(e.Pct))
		sw = max(sw, utf8.RuneCountInString(e.Step))
		kw = max(kw, len(e.Class))
	}
	sw = min(sw, 24)
	kw = min(kw, 24)
	fmt.Fprintf(b, "  %*s  %*s  %-*s  %-*s  %s\n", cw, "Count", pw, "% step", sw, "Step", kw, "Class", "Message")
	for _, e := range shown {
		fmt.Fprintf(b, "  %*d  %*s  %-*s  %-*s  %s\n", cw, e.Count, pw, e.Pct, sw, shorten(e.Step, sw), kw, shorten(e.Class, kw), shorten(e.Message, termMessage))
	}
	if rest := rows[len(shown):]; len(rest) > 0 {
		var n int64
		for _, e := range rest {
			n += e.Count
		}
		fmt.Fprintf(b, "  … %s more (%d failures): see the report or the result JSON\n", plural(len(rest), "message"), n)
	}
	b.WriteString("\n")
}

// statusLine is a step's status codes in numeric order: "201: 9000, 409: 1000".
func statusLine(m map[string]int64) string {
	var parts []string
	for _, k := range result.SortedStatuses(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// statusRows are each step's status codes, successes included, for the
// steps that have any.
func statusRows(r *result.Result) []kv {
	var out []kv
	names := stepNames(r.Steps)
	for i, s := range r.Steps {
		if len(s.Statuses) > 0 {
			out = append(out, kv{names[i], statusLine(s.Statuses)})
		}
	}
	return out
}

// statusBlock writes every step's status codes in the terminal summary.
func statusBlock(b *bytes.Buffer, r *result.Result) {
	rows := statusRows(r)
	if len(rows) == 0 {
		return
	}
	b.WriteString("Status Codes:\n")
	for _, s := range rows {
		fmt.Fprintf(b, "  %s: %s\n", s.Key, s.Value)
	}
	b.WriteString("\n")
}

// mdErrors writes the Errors and Status codes tables of the Markdown
// report; messages are shown whole, up to MaxMessage.
func mdErrors(b *bytes.Buffer, r *result.Result) {
	if rows := errorRows(r); len(rows) > 0 {
		b.WriteString("### Errors\n\n")
		var out [][]string
		for _, e := range rows {
			out = append(out, []string{fmt.Sprint(e.Count), e.Pct, e.Step, e.Class, e.Message})
		}
		// The message column is code: it reads exactly as the terminal's.
		mdTable(b, []string{"Count", "% of step", "Step", "Class", "Message"}, out, 4)
		b.WriteString("\n")
	}
	var out [][]string
	for _, s := range statusRows(r) {
		out = append(out, []string{s.Key, s.Value})
	}
	if len(out) > 0 {
		b.WriteString("### Status codes\n\n")
		mdTable(b, []string{"Step", "Statuses"}, out)
		b.WriteString("\n")
	}
}
