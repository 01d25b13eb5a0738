package merge

import "github.com/stampede-load/stampede/internal/result"

// Results merges rs with default options: all inputs must come from the
// same plan.
func Results(rs []*result.Result) (*result.Result, error) { return Options{}.Results(rs) }
