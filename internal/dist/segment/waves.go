package segment

import (
	"time"

	"github.com/stampede-load/stampede/internal/profile"
)

// Waves numbers the users of a plan whose tenant pool is split into waves
// (plan.Wave). Each wave is its own closed profile and is split on its own,
// by Stripe rather than Share: the k-th user of a wave (wave-local, from 1)
// belongs to segment (k−1) mod N, so at wave-time t segment i runs
// Stripe(v) = ⌈(v−i)/N⌉ of the wave's v users. That sums exactly to v for
// every wave at every instant like Share does, and unlike Share it never
// falls while v rises (Share of 1, 2, 3 users for segment 1/3 is 1, 0, 1),
// so a ramp up starts no user a segment must retire and replace: while a
// wave ramps up, the segments together run exactly the users 1..v that one
// process runs, with the same ids and tenants, not only at the peak.
//
// A user's identity must not depend on how the waves' starts interleave
// (which differs between one process and N, and from run to run), so wave
// g's k-th user has:
//
//   - tenant First + ((k−1)/per_tenant) mod (Last−First+1), the wave's
//     tenants in turn, a block of per_tenant users each;
//   - whole-test id base_g + k for k up to the wave's peak, where base_g is
//     the sum of the previous waves' peaks. The ids 1..sum of peaks are then
//     each wave's peak users, and with per_tenant each wave's peak is
//     per_tenant × its tenants, so a tenant's block starts at a multiple of
//     per_tenant and the scenario order (period per_tenant) gives every
//     tenant exactly K users of each scenario, as plan.TenantOf does for a
//     pool without waves;
//   - replacements past the peak (a ramp down and up again) take ids above
//     every peak, interleaved by wave, so no two waves or segments share one.
//
// One process is segment 0/1 of the same rule.
type Waves struct {
	waves     []profile.Wave
	peak      []int64
	base      []int64
	total     int64
	perTenant int64
}

// NewWaves numbers p's waves; it is empty for a test without waves.
func NewWaves(p Test) *Waves { return newWaves(p.Quantities()) }

func newWaves(q profile.Quantities) *Waves {
	w := &Waves{waves: q.Waves, perTenant: int64(max(1, q.PerTenant))}
	for _, wv := range q.Waves {
		pk := PeakUsers(wv.Stages)
		w.base = append(w.base, w.total)
		w.peak = append(w.peak, pk)
		w.total += pk
	}
	return w
}

// Len is the number of waves.
func (w *Waves) Len() int { return len(w.waves) }

// Peak is wave g's peak users in the whole test.
func (w *Waves) Peak(g int) int64 { return w.peak[g] }

// UsersAt is the users wave g runs in the whole test at el on the run's
// clock (0 before its offset and from the end of its own profile).
func (w *Waves) UsersAt(g int, el time.Duration) int { return WaveUsersAt(w.waves[g], el) }

// WaveUsersAt is the users wave wv runs in the whole test at el on the
// run's clock. A wave that has ended runs none, where the profile alone
// would hold its last value.
func WaveUsersAt(wv profile.Wave, el time.Duration) int {
	at := el - wv.Offset
	if at < 0 || at >= wv.Duration() {
		return 0
	}
	return profile.UsersAt(wv.Stages, at)
}

// PeakTime is the first instant at which the waves together run the most
// users, each wave's rounded on its own as runWaves keeps them. A sum of
// separately rounded ramps can peak between stage ends (one wave rising
// while another falls), so it looks every 10 ms as well as at every
// boundary.
func (w *Waves) PeakTime() time.Duration {
	var end time.Duration
	var marks []time.Duration
	for _, wv := range w.waves {
		marks = append(marks, wv.Offset)
		for _, b := range profile.Bounds(nil, wv.Stages, wv.Offset) {
			marks = append(marks, b-1, b)
		}
		end = max(end, wv.Offset+wv.Duration())
	}
	for t := time.Duration(0); t < end; t += 10 * time.Millisecond {
		marks = append(marks, t)
	}
	best, bestN := time.Duration(0), -1
	for _, t := range marks {
		if t < 0 || t >= end {
			continue
		}
		n := 0
		for g := range w.waves {
			n += w.UsersAt(g, t)
		}
		if n > bestN || (n == bestN && t < best) {
			best, bestN = t, n
		}
	}
	return best
}

// SegUsersAt is s's part of wave g's users at el.
func (w *Waves) SegUsersAt(s Segment, g int, el time.Duration) int {
	return int(s.Stripe(int64(w.UsersAt(g, el))))
}

// User is the whole-test id and the tenant of the local-th user (from 1)
// that s starts in wave g.
func (w *Waves) User(s Segment, g int, local int64) (id int64, tenant int) {
	k := s.UserID(local) // the local-th item of s's stripe of the wave
	return w.ID(g, k), w.Tenant(g, k)
}

// ID is the whole-test id of wave g's k-th user (wave-local, from 1).
func (w *Waves) ID(g int, k int64) int64 {
	if k <= w.peak[g] {
		return w.base[g] + k
	}
	return w.total + (k-w.peak[g]-1)*int64(len(w.waves)) + int64(g) + 1
}

// Tenant is the tenant of wave g's k-th user (wave-local, from 1).
func (w *Waves) Tenant(g int, k int64) int {
	wv := w.waves[g]
	n := int64(max(1, wv.Last-wv.First+1))
	return wv.First + int(((k-1)/w.perTenant)%n)
}
