package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// The terminal summary shows the setup, teardown and renewals apart from
// the load's figures.
func TestTextWorkflow(t *testing.T) {
	r := healthyClosed(t)
	r.Workflow = &result.Workflow{
		Renewals: 7,
		Setup:    &result.Phase{Requests: 2, Steps: []result.Step{{Name: "create", Requests: 2, ByClass: map[string]int64{"ok": 2}}}},
		Teardown: &result.Phase{Requests: 1, Failed: 1, Error: `step "delete" failed: 404 Not Found`,
			Steps: []result.Step{{Name: "delete", Requests: 1, Failed: 1, ByClass: map[string]int64{"client_error": 1}}}},
	}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Workflow:\n",
		"  Setup: 2 requests, 0 failed\n",
		"  Teardown: 1 request, 1 failed; delete: 1 client errors — step \"delete\" failed: 404 Not Found\n",
		"  Renewals: 7 (once steps run again after a renew_on status)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	r.Workflow = nil
	b.Reset()
	Text(&b, r)
	if strings.Contains(b.String(), "Workflow:") {
		t.Error("a plan without a workflow shows a Workflow block")
	}
}

// The Markdown and HTML reports show the workflow as the terminal summary
// does: setup and teardown requests and failures, and the renewals.
func TestMarkdownAndHTMLWorkflow(t *testing.T) {
	r := healthyClosed(t)
	r.Workflow = &result.Workflow{
		Renewals: 7,
		Setup:    &result.Phase{Requests: 2, Steps: []result.Step{{Name: "create", Requests: 2, ByClass: map[string]int64{"ok": 2}}}},
		Teardown: &result.Phase{Requests: 1, Failed: 1, Error: `step "delete" failed: 404 Not Found`,
			Steps: []result.Step{{Name: "delete", Requests: 1, Failed: 1, ByClass: map[string]int64{"client_error": 1}}}},
	}
	var md, page bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### Workflow\n\n| Phase | Requests | Failed | Failures | Error |\n",
		"| Setup | 2 | 0 |  |  |\n",
		"| Teardown | 1 | 1 | delete: 1 client errors | step \"delete\" failed: 404 Not Found |\n",
		"Renewals: 7 (once steps run again after a renew_on status)",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{
		`<h2>Workflow</h2>`,
		`<tr><th>Setup</th><td>2</td><td>0</td><td class="text"></td><td class="text"></td></tr>`,
		`<tr><th>Teardown</th><td>1</td><td>1</td><td class="text">delete: 1 client errors</td><td class="text">step &#34;delete&#34; failed: 404 Not Found</td></tr>`,
		`Renewals: 7 (once steps run again after a renew_on status)`,
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	r.Workflow = nil
	md.Reset()
	page.Reset()
	Markdown(&md, r)
	HTML(&page, r)
	if strings.Contains(md.String(), "### Workflow") || strings.Contains(page.String(), `id="workflow"`) {
		t.Error("a plan without a workflow shows a Workflow section")
	}
}
