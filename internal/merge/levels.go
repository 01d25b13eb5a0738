package merge

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/result"
)

// levels merges multi-level runs level by level; every input must have run
// the same levels, or the sums would mix different loads.
func (o Options) levels(rs []*result.Result) ([]result.Level, error) {
	first := rs[0].Levels
	for i, r := range rs {
		if len(r.Levels) != len(first) {
			return nil, o.inputErr(i, fmt.Errorf("%d levels, but %s has %d", len(r.Levels), o.name(0), len(first)))
		}
		for j, l := range r.Levels {
			if l.Vary != first[j].Vary || l.Value != first[j].Value {
				return nil, o.inputErr(i, fmt.Errorf("level %d is %s=%g, but %s's is %s=%g",
					j+1, l.Vary, l.Value, o.name(0), first[j].Vary, first[j].Value))
			}
			if l.Result == nil {
				return nil, o.inputErr(i, fmt.Errorf("level %d has no result", j+1))
			}
		}
	}
	if len(first) == 0 {
		return nil, nil
	}
	out := make([]result.Level, len(first))
	for j, l := range first {
		sub := Options{Force: o.Force, Names: make([]string, len(rs))}
		lrs := make([]*result.Result, len(rs))
		for i, r := range rs {
			lrs[i] = r.Levels[j].Result
			sub.Names[i] = fmt.Sprintf("%s level %d", o.name(i), j+1)
		}
		m, err := sub.Results(lrs)
		if err != nil {
			return nil, err
		}
		out[j] = result.Level{Vary: l.Vary, Value: l.Value, Result: m}
		for _, t := range l.SLO {
			out[j].SLO = append(out[j].SLO, result.Threshold{Expr: t.Expr})
		}
	}
	return out, nil
}

// errorsTop is how many messages a merged step keeps: the most any input
// kept, so a merge never shows less than its segments did.
func errorsTop(rs []*result.Result) int {
	top := 0
	for _, r := range rs {
		top = max(top, r.ErrorsTop)
	}
	if top == 0 {
		return result.DefaultErrorsTop
	}
	return top
}
