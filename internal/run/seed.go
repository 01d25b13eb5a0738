package run

import (
	"math/rand/v2"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// runSeed is the seed of the users' draws: the plan's when it gives one,
// else the one the levels before this run drew (carry), else a fresh one
// (math/rand/v2's global source is seeded at random per process), so two
// runs of a plan do not send the same {{ uuid }}s.
func runSeed(p *plan.Plan, carry *vu.Carry) uint64 {
	if p.Seed != nil {
		return *p.Seed
	}
	if carry != nil {
		return carry.Seed(rand.Uint64)
	}
	return rand.Uint64()
}
