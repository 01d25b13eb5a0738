package session

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stampede-load/stampede/internal/localfile"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/run"
)

// AllowFilesFlag is the flag that vouches for more directories a plan may
// read files from (the error of a refused file names it).
const AllowFilesFlag = localfile.AllowFlag

// Load reads the plan at path into a plan that is valid as a whole:
// everything plan.LoadFileWith checks (syntax, stages, steps, thresholds,
// gate SLOs, data files) and the monitor specs, which only the collectors
// can judge. Every problem is a usage error (exit 2) with its place in the
// file, reported the same way whichever part found it.
func Load(path string, o plan.LoadOptions) (*plan.Plan, error) {
	p, err := plan.LoadFileWith(path, o)
	if err != nil {
		var pe *plan.Error
		if errors.As(err, &pe) {
			return nil, Fail(ExitUsage, fmt.Errorf("invalid plan:\n%v", err))
		}
		return nil, Fail(ExitUsage, fmt.Errorf("cannot read plan: %v", err))
	}
	if problems := run.CheckMonitors(p); len(problems) > 0 {
		return nil, Fail(ExitUsage, fmt.Errorf("invalid plan:\n%s", strings.Join(problems, "\n")))
	}
	return p, nil
}

// Load is Load with the plan's ${NAME} references read from this
// process's environment (LookupEnv; none without it).
func (pr Process) Load(path string, o plan.LoadOptions) (*plan.Plan, error) {
	o.Env = pr.LookupEnv
	if o.Env == nil {
		o.Env = func(string) (string, bool) { return "", false }
	}
	return Load(path, o)
}
