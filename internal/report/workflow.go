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

// workflowView is the workflow block for the Markdown and HTML reports:
// one row per phase that ran, and the renewals.
type workflowView struct {
	Rows     []workflowRow
	Renewals int64
}

type workflowRow struct {
	Phase, Requests, Failed, Failures, Error string
}

func workflowOf(r *result.Result) *workflowView {
	w := r.Workflow
	if w == nil {
		return nil
	}
	v := &workflowView{Renewals: w.Renewals}
	for _, ph := range []struct {
		name string
		p    *result.Phase
	}{{"Setup", w.Setup}, {"Teardown", w.Teardown}} {
		if ph.p == nil {
			continue
		}
		var fails []string
		for _, s := range ph.p.Steps {
			if fl := failureList(s.ByClass, sample.OK); s.Failed > 0 && len(fl) > 0 {
				fails = append(fails, s.Name+": "+strings.Join(fl, ", "))
			}
		}
		v.Rows = append(v.Rows, workflowRow{Phase: ph.name, Requests: fmt.Sprint(ph.p.Requests),
			Failed: fmt.Sprint(ph.p.Failed), Failures: strings.Join(fails, "; "), Error: ph.p.Error})
	}
	return v
}

// mdWorkflow writes the text summary's Workflow block as a table.
func mdWorkflow(b *bytes.Buffer, r *result.Result) {
	v := workflowOf(r)
	if v == nil {
		return
	}
	b.WriteString("### Workflow\n\n")
	if len(v.Rows) > 0 {
		var cells [][]string
		for _, w := range v.Rows {
			cells = append(cells, []string{w.Phase, w.Requests, w.Failed, w.Failures, w.Error})
		}
		mdTable(b, []string{"Phase", "Requests", "Failed", "Failures", "Error"}, cells)
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Renewals: %d (once steps run again after a renew_on status). Setup and teardown requests are not in the load's figures.\n\n", v.Renewals)
}
