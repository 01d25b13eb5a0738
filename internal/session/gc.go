package session

import (
	"slices"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sched"
)

// manyUsers is the count of users plus held connections from which memory
// per user matters more than the garbage collector's CPU.
const manyUsers = 1000

// tuneGC keeps the heap tight when a run of p holds many users: the
// garbage collector's percent is the process's, so the session sets it,
// not the run. The request path allocates (almost) nothing, so a lower
// GOGC costs little CPU, while the default lets the heap grow to twice
// what thousands of idle users need. Idle persistent connections make
// even less garbage (a ping every 15 s), so a population of them gets a
// tighter heap still: measured on 18,000 SignalR connections, GOGC 10
// took the process's own memory from 7.4 to 6.6 KB per connection for
// about 0.04 cores more CPU (docs/benchmarks.md). A GOGC set by the user
// wins.
func (pr Process) tuneGC(p *plan.Plan) {
	if _, set := pr.lookupEnv("GOGC"); set {
		return
	}
	if percent := gcPercent(p); percent > 0 && pr.SetGCPercent != nil {
		pr.SetGCPercent(percent)
	}
}

// gcPercent is the GOGC a run of p needs; 0 leaves the default.
func gcPercent(p *plan.Plan) int {
	users, conns := 0, 0
	if p.Load.Model == plan.Closed {
		users = int(sched.MaxTarget(p.Load.Stages))
	}
	for _, sc := range p.Scenarios {
		if sc.Connection != nil {
			conns += sc.Connection.Count(p.Tenants)
		}
	}
	switch {
	case conns >= manyUsers && conns >= users:
		return 10
	case users+conns >= manyUsers:
		return 25
	}
	return 0
}

// tuneGCForLevels tunes for the level that holds the most users.
func (pr Process) tuneGCForLevels(p *plan.Plan, vary string, values []float64, ramp, hold time.Duration) {
	if len(values) == 0 {
		pr.tuneGC(p)
		return
	}
	if lp, err := p.AtLevel(vary, slices.Max(values), ramp, hold); err == nil {
		pr.tuneGC(lp)
	}
}
