package session

import (
	"github.com/stampede-load/stampede/internal/plan"
)

// Validate loads a plan as run would, data files resolved from dataDir as
// run --data-dir resolves them, and checks that one process holds it,
// every gate level included; the message of a refusal says how many
// --workers it needs.
func (pr Process) Validate(path, dataDir string, allow []string) (*plan.Plan, error) {
	p, err := pr.Load(path, plan.LoadOptions{DataDir: dataDir, AllowFiles: allow})
	if err != nil {
		return nil, err
	}
	if err := CheckFit(pr.Stderr, p, 1); err != nil {
		return nil, err
	}
	if g := p.Gates; g != nil {
		if err := CheckLevelsFit(pr.Stderr, p, g.Vary, g.Levels, g.Ramp, g.Hold, 1); err != nil {
			return nil, err
		}
	}
	return p, nil
}
