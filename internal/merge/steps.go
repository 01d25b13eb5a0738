package merge

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/result"
)

// stepKey names a step across results: two unnamed steps of a scenario
// to the same URL share a name ("GET /items"), and the nth is matched
// with the nth, as a single process reports them apart.
type stepKey struct {
	scenario, name string
	nth            int
}

// stepSum is one merged step while its inputs are added.
type stepSum struct {
	step result.Step
	// msgs and others are the inputs' messages of the step; noMsgs the
	// failures of inputs written before steps kept messages.
	msgs     [][]result.StepError
	others   []map[string]int64
	noMsgs   map[string]int64
	withMsgs bool
}

// add counts one input's step in.
func (a *stepSum) add(s result.Step) {
	if a.step.Group == "" {
		a.step.Group = s.Group
	}
	a.step.Requests += s.Requests
	a.step.Successful += s.Successful
	a.step.Failed += s.Failed
	addClasses(a.step.ByClass, s.ByClass)
	a.step.Statuses = result.AddCounts(a.step.Statuses, s.Statuses)
	if len(s.Errors) > 0 || len(s.OtherErrors) > 0 {
		a.withMsgs = true
		a.msgs = append(a.msgs, s.Errors)
		a.others = append(a.others, s.OtherErrors)
	} else if s.Failed > 0 {
		if a.noMsgs == nil {
			a.noMsgs = map[string]int64{}
		}
		addClasses(a.noMsgs, s.ByClass)
	}
}

// steps matches steps by scenario, name and place among the steps of
// that name, keeping the order in which they first appear so a merged
// report reads like its inputs.
func (o Options) steps(rs []*result.Result) ([]result.Step, error) {
	order, byKey := sumSteps(rs)
	top := errorsTop(rs)
	out := make([]result.Step, 0, len(order))
	for _, k := range order {
		a := byKey[k]
		if a.withMsgs {
			// The top of the merge is chosen from every input's kept
			// messages; what is cut, and the failures of inputs that kept
			// no messages, count as other messages, so each class still
			// adds up.
			a.step.Errors, a.step.OtherErrors = result.CombineErrors(top, a.msgs, append(a.others, a.noMsgs))
		}
		if err := o.stepLatencies(rs, k, &a.step); err != nil {
			return nil, err
		}
		out = append(out, a.step)
	}
	return out, nil
}

// sumSteps adds up every input's steps by key, in the order keys first
// appear.
func sumSteps(rs []*result.Result) ([]stepKey, map[stepKey]*stepSum) {
	var order []stepKey
	byKey := map[stepKey]*stepSum{}
	for _, r := range rs {
		seen := map[stepKey]int{} // steps of each name so far, by nth 0
		for _, s := range r.Steps {
			named := stepKey{s.Scenario, s.Name, 0}
			k := stepKey{s.Scenario, s.Name, seen[named]}
			seen[named]++
			a := byKey[k]
			if a == nil {
				a = &stepSum{step: result.Step{Scenario: s.Scenario, Name: s.Name, Group: s.Group, ByClass: map[string]int64{}}}
				byKey[k] = a
				order = append(order, k)
			}
			a.add(s)
		}
	}
	return order, byKey
}

// findStep is r's step of key k.
func findStep(r *result.Result, k stepKey) (result.Step, bool) {
	nth := 0
	for _, s := range r.Steps {
		if s.Scenario == k.scenario && s.Name == k.name {
			if nth == k.nth {
				return s, true
			}
			nth++
		}
	}
	return result.Step{}, false
}

// stepLatencies merges the histograms of step k of every input that has
// it.
func (o Options) stepLatencies(rs []*result.Result, k stepKey, step *result.Step) error {
	what := fmt.Sprintf("step %q", k.name)
	var err error
	if step.LatencyOK, err = o.mergeLatency(rs, what+" latency_ok", func(r *result.Result) []result.Latency {
		if s, ok := findStep(r, k); ok {
			return []result.Latency{s.LatencyOK}
		}
		return nil
	}); err != nil {
		return err
	}
	step.LatencyAll, err = o.mergeLatency(rs, what+" latency_all", func(r *result.Result) []result.Latency {
		if s, ok := findStep(r, k); ok {
			return []result.Latency{s.LatencyAll}
		}
		return nil
	})
	return err
}
