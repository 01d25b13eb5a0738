package levels

import (
	"fmt"

	"github.com/stampede-load/stampede/internal/plan"
)

// SplitRefusal says why the levels of p cannot be split over processes
// (--workers), or "" when they can: what the command refuses, and what
// advice to split the load must not offer.
func SplitRefusal(p *plan.Plan) string {
	switch {
	case p.Target == "demo":
		return "--workers with target: demo: each process would start its own demo; start it with 'stampede demo' and give its URL as the target"
	case p.Setup != nil || p.Teardown != nil:
		return "--workers with a plan that has setup: or teardown: is not supported for levels yet: each level's processes would run them again; run the levels in one process"
	}
	for _, d := range p.Data {
		if d.Pick == plan.PickUnique {
			// Each level's processes are new: the rows an earlier level
			// handed out would be handed out again.
			return fmt.Sprintf("--workers with pick: unique data (%s) is not supported for levels yet: each level would hand its rows out again; run the levels in one process", d.Name)
		}
	}
	return ""
}
