package gate

import (
	"fmt"
	"strings"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// loopCrossOrigin warns, however few they are, of requests the event
// loop failed at a redirect to another origin: an engine limit, not the
// target's answer, which --engine goroutines follows.
func loopCrossOrigin(r *result.Result) (result.Indicator, bool) {
	var n int64
	for _, st := range r.Steps {
		for _, e := range st.Errors {
			if strings.Contains(e.Message, sample.LoopCrossOrigin) {
				n += e.Count
			}
		}
	}
	if n == 0 {
		return result.Indicator{}, false
	}
	return result.Indicator{
		ID: "loop_cross_origin", Severity: SeverityWarn,
		Message: fmt.Sprintf("%d requests ended at a redirect to another origin, which the event-loop engine cannot follow (it dials one address): "+
			"they are failures of this engine, not of the target - rerun with --engine goroutines to follow them, or set redirects: 0 to measure the 3xx", n),
		Evidence: map[string]float64{"redirects": float64(n)},
	}, true
}
