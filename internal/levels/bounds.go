package levels

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
)

// generatorBound are the indicators that say a level's load was held back
// by the generator rather than the target: arrivals dropped at
// max_in_flight, a CPU-bound generator. Lag counts through the level's
// Suspect, which weighs it against the latency measured: 3ms of lag
// against a 140ms p95 explains nothing, and generator_lag is raised at
// 1ms whatever the latency.
var generatorBound = []string{"dropped", "generator_cpu"}

// serverLimit is the indicator (gate's monitor findings) that names a
// server resource at its limit.
const serverLimit = "server_limit"

// bounds judges the levels that bound a capacity search's answer, the last
// pass at rate and the first failure at failedAt: the answer is
// undetermined (why) when either is suspect (lag) or generator-bound, since the
// limit found may then be the generator's; bound names the server resource
// the failing level's monitors found at its limit.
func bounds(levels []result.Level, rate, failedAt float64) (why, bound string) {
	var reasons []string
	for _, l := range levels {
		if l.Result == nil || (l.Value != rate || !l.Pass) && (l.Value != failedAt || l.Pass) {
			continue
		}
		name := FormatLevel(l.Vary, l.Value)
		if l.Suspect != "" {
			reasons = append(reasons, name+" is suspect: "+l.Suspect)
		}
		for _, in := range l.Result.Indicators {
			switch {
			case slices.Contains(generatorBound, in.ID):
				reasons = append(reasons, fmt.Sprintf("%s: %s", name, in.Message))
			case !l.Pass && bound == "" && in.ID == serverLimit:
				bound = fmt.Sprintf("%s: %s", name, in.Message)
			}
		}
	}
	return strings.Join(reasons, "; "), bound
}
