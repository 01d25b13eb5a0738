package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// cellMessages are error messages with what Markdown and GFM tables read
// specially: "|", "<" and "&", backticks, a backslash before a "|", line
// breaks and spaces at both ends.
var cellMessages = []string{
	`body does not contain "<ok> & done"`,
	`json ok: expected "yes|no", got "true"`,
	"header has `x` and ``y``",
	"`quoted` first",
	"ends with a backtick `",
	`regex a\|b did not match`,
	"first line\nsecond line\r\nthird",
	" padded ",
	"&lt;already an entity&gt;",
}

// withCellErrors gives healthyClosed's third step a name with "|" and
// "<script>", and one error for each of cellMessages.
func withCellErrors(t *testing.T, name string) *result.Result {
	t.Helper()
	r := healthyClosed(t)
	st := &r.Steps[2]
	st.Name = name
	st.Errors = nil
	for _, m := range cellMessages {
		st.Errors = append(st.Errors, result.StepError{Class: "check", Message: m, Count: 7})
	}
	n := int64(7 * len(cellMessages))
	st.Statuses = map[string]int64{"201": st.Successful, "200": n}
	st.ByClass = map[string]int64{"check": n}
	st.Failed = n
	st.Requests += n
	r.Totals.Requests += n
	r.Totals.Failed += n
	r.Totals.ByClass = map[string]int64{"check": n}
	if err := st.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	return r
}

// gfmCells splits a table row as GFM does (cmark-gfm, markdown-it): at
// every "|" no backslash precedes, taking one backslash off each `\|`.
func gfmCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
		case row[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		cells = append(cells, s)
	}
	return cells
}

// codeSpanText is what CommonMark shows for a cell that is one code span,
// or ok false when the cell is not one.
func codeSpanText(cell string) (string, bool) {
	n := len(cell) - len(strings.TrimLeft(cell, "`"))
	fence := strings.Repeat("`", n)
	if n == 0 || len(cell) < 2*n+1 || !strings.HasSuffix(cell, fence) || strings.HasSuffix(cell, fence+"`") {
		return "", false
	}
	s := cell[n : len(cell)-n]
	for _, run := range strings.FieldsFunc(s, func(r rune) bool { return r != '`' }) {
		if len(run) == n {
			return "", false // it would have closed the span early
		}
	}
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		s = s[1 : len(s)-1]
	}
	return s, true
}

// inlineText is what CommonMark shows for a text cell holding backslash
// escapes and entities but no other syntax.
func inlineText(cell string) string {
	var b strings.Builder
	for i := 0; i < len(cell); i++ {
		if cell[i] == '\\' && i+1 < len(cell) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", cell[i+1]) >= 0 {
			i++
		}
		b.WriteByte(cell[i])
	}
	return html.UnescapeString(b.String())
}

// tableRows are the body rows of the Markdown table under heading, split
// into cells as GFM does.
func tableRows(t *testing.T, md, heading string) [][]string {
	t.Helper()
	i := strings.Index(md, heading+"\n\n")
	if i < 0 {
		t.Fatalf("no %q in:\n%s", heading, md)
	}
	lines := strings.Split(md[i+len(heading)+2:], "\n")
	var rows [][]string
	for _, l := range lines[2:] { // the head and the delimiter row
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, gfmCells(l))
	}
	return rows
}

// Every Markdown table writes a cell by one rule: a message reads exactly
// as the terminal's (a code span: "|" escaped once, no HTML entities,
// backticks kept), and a step name is the same text in every table, with
// no raw HTML.
func TestMarkdownTableCellsReadAsRecorded(t *testing.T) {
	name := `POST /a|b <script>alert(1)</script> c\|d`
	r := withCellErrors(t, name)
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.Contains(md, "<script>") {
		t.Errorf("raw <script> outside a code span:\n%s", md)
	}
	// The source, as the issue saw it.
	for _, want := range []string{
		"| `json ok: expected \"yes\\|no\", got \"true\"` |",
		"| `body does not contain \"<ok> & done\"` |",
		"| ``` header has `x` and ``y`` ``` |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %s:\n%s", want, md)
		}
	}

	// What a GFM renderer shows.
	const stepCell = `POST /a\|b &lt;script&gt;alert(1)&lt;/script&gt; c\\\|d`
	rows := tableRows(t, md, "### Errors")
	if len(rows) != len(cellMessages) {
		t.Fatalf("%d error rows, want %d:\n%s", len(rows), len(cellMessages), md)
	}
	for _, row := range rows {
		if len(row) != 5 {
			t.Errorf("row split into %d cells, want 5: %q", len(row), row)
			continue
		}
		got, ok := codeSpanText(row[4])
		if !ok {
			t.Errorf("message cell %q is not one code span", row[4])
			continue
		}
		found := false
		for _, m := range cellMessages {
			found = found || got == strings.NewReplacer("\r\n", " ", "\n", " ").Replace(m)
		}
		if !found {
			t.Errorf("message cell %q reads %q, none of the messages", row[4], got)
		}
		if got := inlineText(row[2]); got != name {
			t.Errorf("Errors step cell %q reads %q, want %q", row[2], got, name)
		}
	}
	for _, heading := range []string{"### Errors", "### Status codes", "### Steps"} {
		var cells []string
		for _, row := range tableRows(t, md, heading) {
			for _, c := range row {
				if strings.HasPrefix(c, "POST /a") {
					cells = append(cells, c)
				}
			}
		}
		if len(cells) == 0 {
			t.Errorf("%s has no row for the step:\n%s", heading, md)
		}
		for _, c := range cells {
			// gfmCells has taken the table's one backslash off each "|".
			if want := strings.ReplaceAll(stepCell, `\|`, "|"); c != want {
				t.Errorf("%s writes the step as %q, want %q", heading, c, want)
			}
		}
	}
	if !strings.Contains(md, "| "+stepCell+" |") {
		t.Errorf("step cell not written as %s:\n%s", stepCell, md)
	}
}
