package metrics

import (
	"sort"

	"github.com/stampede-load/stampede/internal/result"
)

// sortErrors orders samples most frequent first so reports lead with what
// mattered, with a stable order for equal counts.
func sortErrors(es []result.ErrorSample) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Count != es[j].Count {
			return es[i].Count > es[j].Count
		}
		if es[i].Step != es[j].Step {
			return es[i].Step < es[j].Step
		}
		return es[i].Class < es[j].Class
	})
}
