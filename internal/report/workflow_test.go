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
