package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// withErrors gives healthyClosed's "POST vote" 1000 conflicts and 3 server
// errors, one with a long page, as a run records them.
func withErrors(t *testing.T, conflicts int64, page string) *result.Result {
	r := healthyClosed(t)
	st := &r.Steps[2]
	st.Statuses = map[string]int64{"201": st.Successful, "409": conflicts, "503": 3}
	st.Errors = []result.StepError{
		{Class: "client_error", Status: 409, Message: `409 Conflict: {"error":"voter has already voted"}`, Count: conflicts},
		{Class: "server_error", Status: 503, Message: "503 Service Unavailable: " + page, Count: 2},
	}
	st.OtherErrors = map[string]int64{"server_error": 1}
	st.ByClass = map[string]int64{"client_error": conflicts, "server_error": 3}
	st.Failed = conflicts + 3
	st.Requests += conflicts + 3
	r.Totals.Requests += conflicts + 3
	r.Totals.Failed += conflicts + 3
	r.Totals.ByClass = map[string]int64{"client_error": conflicts, "server_error": 3}
	if err := st.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestErrorsTableInEveryFormat(t *testing.T) {
	page := "Pool exhausted " + strings.Repeat("and the pool is still exhausted ", 6) + "END"
	r := withErrors(t, 1000, page)
	var text bytes.Buffer
	if err := Text(&text, r); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	// The table follows the error breakdown and leads with the most
	// frequent message, its exact count and share of the step.
	eb, et := strings.Index(out, "Error Breakdown:"), strings.Index(out, "Errors:\n")
	if eb < 0 || et < eb || strings.Index(out, "Request Type Breakdown:") < et {
		t.Fatalf("Errors table missing or misplaced:\n%s", out)
	}
	for _, want := range []string{
		`   1000  49.93%  POST vote  client_error  409 Conflict: {"error":"voter has already voted"}`,
		"      2   0.10%  POST vote  server_error  503 Service Unavailable: Pool exhausted and",
		"      1   0.05%  POST vote  server_error  (other messages, not kept)",
		"Status Codes:\n  POST vote: 201: 1000, 409: 1000, 503: 3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "END") {
		t.Error("the terminal shows a long message whole")
	}
	var md, html bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"markdown": md.String(), "html": html.String()} {
		if !strings.Contains(doc, "END") || !strings.Contains(doc, "1000") {
			t.Errorf("%s lacks the full message or its count", name)
		}
	}
	if !strings.Contains(md.String(), "| 1000 | 49.93% | POST vote | client_error | `409 Conflict: {\"error\":\"voter has already voted\"}` |") {
		t.Errorf("markdown Errors table:\n%s", md.String())
	}
	if !strings.Contains(html.String(), "409 Conflict: {&#34;error&#34;:&#34;voter has already voted&#34;}") {
		t.Error("html lacks the 409 message")
	}
}

// A result from before steps kept messages shows its flat samples.
func TestErrorsTableOfOlderResults(t *testing.T) {
	r := healthyClosed(t)
	r.Samples = []result.ErrorSample{{Step: "POST vote", Class: "other", Message: "boom", Count: 4}}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "4       -  POST vote  other  boom") {
		t.Fatalf("old samples not shown:\n%s", b.String())
	}
}

func TestCompareShowsErrorsThatAppearedOrVanished(t *testing.T) {
	a := withErrors(t, 1000, "busy")
	b := healthyClosed(t)
	b.Steps[2].Errors = nil
	c, err := Compare([]*result.Result{a, b}, []string{"before", "after"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CompareText(&out, c); err != nil {
		t.Fatal(err)
	}
	want := `after: vanished: POST vote client_error ×1000: 409 Conflict: {"error":"voter has already voted"}`
	if !strings.Contains(out.String(), want) {
		t.Fatalf("compare lacks %q:\n%s", want, out.String())
	}
	c, _ = Compare([]*result.Result{b, a}, []string{"before", "after"})
	out.Reset()
	if err := CompareMarkdown(&out, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "after: appeared: POST vote server\\_error ×2: 503 Service Unavailable: busy") &&
		!strings.Contains(out.String(), "after: appeared: POST vote server_error ×2: 503 Service Unavailable: busy") {
		t.Fatalf("compare markdown lacks the appeared 503:\n%s", out.String())
	}
}
