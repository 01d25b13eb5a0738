package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// workflowBlock writes the setup and teardown, whose requests are kept out
// of the load's figures above, and the renewals of users' once steps.
func workflowBlock(b *bytes.Buffer, r *result.Result) {
	w := r.Workflow
	if w == nil {
		return
	}
	b.WriteString("Workflow:\n")
	phase := func(name string, p *result.Phase) {
		if p == nil {
			return
		}
		line := fmt.Sprintf("  %s: %s, %d failed", name, plural(int(p.Requests), "request"), p.Failed)
		for _, s := range p.Steps {
			if fl := failureList(s.ByClass, sample.OK); s.Failed > 0 && len(fl) > 0 {
				line += fmt.Sprintf("; %s: %s", s.Name, strings.Join(fl, ", "))
			}
		}
		if p.Error != "" {
			line += " — " + p.Error
		}
		b.WriteString(line + "\n")
	}
	phase("Setup", w.Setup)
	phase("Teardown", w.Teardown)
	fmt.Fprintf(b, "  Renewals: %d (once steps run again after a renew_on status)\n\n", w.Renewals)
}
