package run

import (
	"time"

	"github.com/stampede-load/stampede/internal/dist/segment"
)

// runWaves is the closed model for a tenant pool split into waves: each
// wave keeps its own users at its own shifted profile. One pool for all
// would retire the newest users on a ramp-down, whichever wave they belong
// to, and a wave ending while the next starts would keep the wrong
// tenants running.
//
// A segment keeps its stripe of each wave separately (segment.Waves), so
// the segments' users sum to the whole's for every wave at every instant,
// and numbers each wave's users on its own: a user's id, tenant and so
// scenario are the same in one process and in N, whatever the order in
// which the waves' users happen to start.
func (cd *closedDriver) runWaves() {
	waves := segment.NewWaves(cd.plan)
	seg := cd.seg()
	end := cd.start.Add(cd.plan.Load.Duration())
	running := make([][]closedUser, waves.Len())
	started := make([]int64, waves.Len())
	for {
		now := time.Now()
		if !cd.mayStart(end) {
			break
		}
		el := now.Sub(cd.start)
		for g := range running {
			want := waves.SegUsersAt(seg, g, el)
			for n := 1; len(running[g]) < want; n++ {
				if n%startBatch == 0 && !cd.mayStart(end) {
					break
				}
				started[g]++
				id, tenant := waves.User(seg, g, started[g])
				cu := closedUser{u: cd.newUserAs(id, tenant), quit: make(chan struct{})}
				running[g] = append(running[g], cu)
				cd.startUser(cu)
			}
			for len(running[g]) > want {
				last := running[g][len(running[g])-1]
				close(last.quit)
				running[g] = running[g][:len(running[g])-1]
			}
		}
		wait := min(time.Until(end), controlEvery)
		select {
		case <-cd.soft:
			return
		case <-time.After(wait):
		}
	}
}

// waveUsersAt is this segment's users of all waves at el: what runWaves
// keeps, wave by wave, for the series' target. Past the end it holds the
// last instant's users, as a profile without waves does, so the last
// partial interval does not read as a drop to zero.
func (r *runner) waveUsersAt(el time.Duration) int {
	if d := r.plan.Load.Duration(); el >= d && d > 0 {
		el = d - 1
	}
	seg := r.seg()
	n := 0
	for _, w := range r.plan.Waves {
		n += int(seg.Stripe(int64(segment.WaveUsersAt(w, el))))
	}
	return n
}
