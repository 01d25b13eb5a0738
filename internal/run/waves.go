package run

import (
	"time"

	"github.com/stampede-load/stampede/internal/sched"
)

// runWaves is the closed model for a tenant pool split into waves: each
// wave keeps its own users at its own shifted profile. One pool for all
// would retire the newest users on a ramp-down, whichever wave they belong
// to, and a wave ending while the next starts would keep the wrong
// tenants running.
func (r *runner) runWaves() {
	waves := r.plan.Waves
	end := r.start.Add(r.plan.Load.Duration())
	running := make([][]closedUser, len(waves))
	created := make([]int, len(waves))
	perTenant := max(1, r.plan.PerTenantUsers())
	for {
		now := time.Now()
		if !now.Before(end) {
			break
		}
		el := now.Sub(r.start)
		total := 0
		for g, w := range waves {
			want := 0
			if at := el - w.Offset; at >= 0 && at < w.Duration() {
				want = sched.UsersAt(w.Stages, at)
			}
			for len(running[g]) < want {
				cu := closedUser{u: r.newUser(), quit: make(chan struct{})}
				// Tenants of the wave in turn, a block of per-tenant users
				// each, as TenantOf does for the whole pool.
				n := w.Last - w.First + 1
				cu.u.SetTenant(w.First + (created[g]/perTenant)%n)
				created[g]++
				running[g] = append(running[g], cu)
				r.startUser(cu)
			}
			for len(running[g]) > want {
				last := running[g][len(running[g])-1]
				close(last.quit)
				running[g] = running[g][:len(running[g])-1]
			}
			total += len(running[g])
		}
		r.maxUsers = max(r.maxUsers, total)
		wait := min(time.Until(end), controlEvery)
		select {
		case <-r.soft:
			return
		case <-time.After(wait):
		}
	}
}
