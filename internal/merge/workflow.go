package merge

import (
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// workflow merges the segments' setups, teardowns and renewals. Every
// segment runs its own setup and teardown, so their requests add up, and
// their steps are listed segment after segment.
func workflow(rs []*result.Result) *result.Workflow {
	var out *result.Workflow
	for _, r := range rs {
		if r.Workflow == nil {
			continue
		}
		if out == nil {
			out = &result.Workflow{}
		}
		out.Renewals += r.Workflow.Renewals
		out.Setup = addPhase(out.Setup, r.Workflow.Setup)
		out.Teardown = addPhase(out.Teardown, r.Workflow.Teardown)
	}
	return out
}

func addPhase(into, p *result.Phase) *result.Phase {
	if p == nil {
		return into
	}
	if into == nil {
		into = &result.Phase{}
	}
	into.Requests += p.Requests
	into.Failed += p.Failed
	into.Steps = append(into.Steps, p.Steps...)
	if p.Error != "" && !strings.Contains(into.Error, p.Error) {
		if into.Error != "" {
			into.Error += "; "
		}
		into.Error += p.Error
	}
	return into
}
