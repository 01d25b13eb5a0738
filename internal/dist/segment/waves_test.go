package segment

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// randWavePlan parses a random plan with a tenant pool in waves, so the
// waves' tenants and profiles are the parser's (finishWaves), not made up
// here. About two in three have per_tenant scenarios.
func randWavePlan(t *testing.T, r *rand.Rand) *plan.Plan {
	t.Helper()
	tenants := 1 + r.IntN(30)
	nw := 1 + r.IntN(min(tenants, 4))
	weights := make([]int, nw)
	sum := 0
	for i := range weights {
		weights[i] = 1 + r.IntN(9)
		sum += weights[i]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "target: http://127.0.0.1:1\ntenants:\n  count: %d\n  waves:\n", tenants)
	acc := 0.0
	for i, w := range weights {
		share := float64(w) / float64(sum)
		if i == nw-1 {
			share = 1 - acc
		}
		share = float64(int(share*1e6)) / 1e6
		acc += share
		fmt.Fprintf(&b, "    - {share: %g, offset: %dms}\n", share, 250*r.IntN(12))
	}
	b.WriteString("scenarios:\n")
	if r.IntN(3) > 0 {
		for s := 1 + r.IntN(2); s > 0; s-- {
			fmt.Fprintf(&b, "  s%d: {per_tenant: %d, steps: [{get: /}]}\n", s, 1+r.IntN(3))
		}
	} else {
		b.WriteString("  a: {weight: 2, steps: [{get: /a}]}\n  b: {steps: [{get: /b}]}\n")
	}
	b.WriteString("load:\n  stages:\n")
	for s := 1 + r.IntN(4); s > 0; s-- {
		users := fmt.Sprint(r.IntN(25))
		if r.IntN(2) == 0 {
			users = fmt.Sprintf("%d -> %d", r.IntN(25), r.IntN(25))
		}
		steps := ""
		if r.IntN(4) == 0 {
			steps = fmt.Sprintf(", steps: %d", 1+r.IntN(4))
		}
		fmt.Fprintf(&b, "    - {duration: %dms, users: %s%s}\n", 250*(1+r.IntN(8)), users, steps)
	}
	p, err := plan.Parse("waves.yaml", []byte(b.String()), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(p.Waves) != nw {
		t.Fatalf("%d waves parsed, want %d:\n%s", len(p.Waves), nw, b.String())
	}
	return p
}

type waveUser struct {
	id     int64
	tenant int
}

// waveSim replays runWaves' control loop for one segment at a coarser
// step: per wave, a stack of running users, started in the order the
// segment numbers them.
type waveSim struct {
	s       Segment
	wu      *Waves
	running [][]waveUser
	started []int64
	retired []bool // a wave retired a user
	all     []waveUser
}

func newWaveSim(s Segment, wu *Waves) *waveSim {
	return &waveSim{s: s, wu: wu, running: make([][]waveUser, wu.Len()), started: make([]int64, wu.Len()),
		retired: make([]bool, wu.Len())}
}

func (sim *waveSim) step(el time.Duration) {
	for g := range sim.running {
		want := sim.wu.SegUsersAt(sim.s, g, el)
		for len(sim.running[g]) < want {
			sim.started[g]++
			id, tenant := sim.wu.User(sim.s, g, sim.started[g])
			u := waveUser{id, tenant}
			sim.running[g] = append(sim.running[g], u)
			sim.all = append(sim.all, u)
		}
		if len(sim.running[g]) > want {
			sim.running[g] = sim.running[g][:want]
			sim.retired[g] = true
		}
	}
}

// TestWaveSegmentsAddUpToTheWhole: for random wave plans and segment
// counts, every wave's users sum exactly to the whole at every 50 ms; no id
// is given twice across waves and segments; and until a wave first ramps
// down, the segments together run exactly the users one process runs, with
// the same ids and tenants.
func TestWaveSegmentsAddUpToTheWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 120; trial++ {
		p := randWavePlan(t, r)
		n := 1 + r.IntN(7)
		wu := NewWaves(p)
		whole := newWaveSim(Whole, wu)
		segs := make([]*waveSim, n)
		for i := range segs {
			segs[i] = newWaveSim(Segment{i, n}, wu)
		}
		total := p.Load.Duration()
		for el := time.Duration(0); el <= total; el += 50 * time.Millisecond {
			whole.step(el)
			for _, sim := range segs {
				sim.step(el)
			}
			for g := range p.Waves {
				v := wu.UsersAt(g, el)
				sum := 0
				for _, sim := range segs {
					sum += wu.SegUsersAt(sim.s, g, el)
				}
				if sum != v || len(whole.running[g]) != v {
					t.Fatalf("trial %d n=%d wave %d at %v: segments run %d users, the whole %d (profile %d)",
						trial, n, g, el, sum, len(whole.running[g]), v)
				}
				if whole.retired[g] {
					continue
				}
				for _, sim := range segs {
					if sim.retired[g] {
						t.Fatalf("trial %d n=%d wave %d at %v: segment %d retired a user while the whole ramps up",
							trial, n, g, el, sim.s.Index)
					}
				}
				want := map[waveUser]bool{}
				for _, u := range whole.running[g] {
					want[u] = true
				}
				got := 0
				for _, sim := range segs {
					for _, u := range sim.running[g] {
						if !want[u] {
							t.Fatalf("trial %d n=%d wave %d at %v: segment %d runs user %+v, which one process does not",
								trial, n, g, el, sim.s.Index, u)
						}
						got++
					}
				}
				if got != len(want) {
					t.Fatalf("trial %d n=%d wave %d at %v: segments run %d of the whole's %d users", trial, n, g, el, got, len(want))
				}
			}
		}
		seen := map[int64]int{}
		for _, sim := range segs {
			for _, u := range sim.all {
				if prev, dup := seen[u.id]; dup {
					t.Fatalf("trial %d n=%d: id %d started by segments %d and %d", trial, n, u.id, prev, sim.s.Index)
				}
				seen[u.id] = sim.s.Index
			}
		}
		ids := map[int64]bool{}
		for _, u := range whole.all {
			if ids[u.id] {
				t.Fatalf("trial %d: one process starts id %d twice", trial, u.id)
			}
			ids[u.id] = true
		}
	}
}

// TestWaveNumbering: the peak users of the waves are the ids 1..Total, each
// once, with each wave's tenants in turn; replacements are above Total; and
// with per_tenant a wave user's tenant is the one the pool-wide rule
// (plan.TenantOf) gives its id, which is what makes the scenario order hand
// every tenant exactly K users of each scenario.
func TestWaveNumbering(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 200; trial++ {
		p := randWavePlan(t, r)
		wu := NewWaves(p)
		per := p.PerTenantUsers()
		next := int64(1)
		for g, wv := range p.Waves {
			if per > 0 && wu.Peak(g) != int64(per*(wv.Last-wv.First+1)) {
				t.Fatalf("trial %d wave %d: peak %d, want per_tenant %d × %d tenants", trial, g, wu.Peak(g), per, wv.Last-wv.First+1)
			}
			for k := int64(1); k <= wu.Peak(g); k++ {
				id, tenant := wu.ID(g, k), wu.Tenant(g, k)
				if id != next {
					t.Fatalf("trial %d wave %d user %d: id %d, want %d", trial, g, k, id, next)
				}
				next++
				if tenant < wv.First || tenant > wv.Last {
					t.Fatalf("trial %d wave %d user %d: tenant %d outside %d..%d", trial, g, k, tenant, wv.First, wv.Last)
				}
				if per > 0 && tenant != p.TenantOf(id) {
					t.Fatalf("trial %d wave %d user %d: tenant %d, pool-wide rule gives id %d tenant %d", trial, g, k, tenant, id, p.TenantOf(id))
				}
			}
			for k := wu.Peak(g) + 1; k <= wu.Peak(g)+5; k++ {
				if id := wu.ID(g, k); id <= wu.Total() {
					t.Fatalf("trial %d wave %d replacement %d: id %d within the peaks (1..%d)", trial, g, k, id, wu.Total())
				}
			}
		}
		if next-1 != wu.Total() {
			t.Fatalf("trial %d: peaks sum to %d, ids to %d", trial, wu.Total(), next-1)
		}
	}
}

// TestWavePlanSharesSumToWhole: PlanShare's waves — every stage of every
// wave and of their sum, each wave's peak and ids, and the users per
// tenant — add up over the segments to the whole's, and every tenant gets
// its per_tenant users.
func TestWavePlanSharesSumToWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 150; trial++ {
		p := randWavePlan(t, r)
		n := 1 + r.IntN(8)
		whole := Of(p, Whole)
		if len(whole.Waves) != len(p.Waves) || len(whole.TenantUsers) != p.Tenants {
			t.Fatalf("trial %d: %d waves and %d tenants reported, plan has %d and %d",
				trial, len(whole.Waves), len(whole.TenantUsers), len(p.Waves), p.Tenants)
		}
		tenants := make([]int64, p.Tenants)
		ids := map[int64]int{}
		for i := 0; i < n; i++ {
			ps := Of(p, Segment{i, n})
			for k, st := range ps.Stages {
				whole.Stages[k].From -= st.From
				whole.Stages[k].To -= st.To
			}
			for j, v := range ps.TenantUsers {
				tenants[j] += v
			}
			for g, ws := range ps.Waves {
				for k, st := range ws.Stages {
					whole.Waves[g].Stages[k].From -= st.From
					whole.Waves[g].Stages[k].To -= st.To
				}
				whole.Waves[g].PeakUsers -= ws.PeakUsers
				for id := ws.FirstID; ws.PeakUsers > 0 && id <= ws.LastID; id += int64(n) {
					if prev, dup := ids[id]; dup {
						t.Fatalf("trial %d n=%d wave %d: id %d in segments %d and %d", trial, n, g, id, prev, i)
					}
					ids[id] = i
				}
			}
		}
		for k, st := range whole.Stages {
			if st.From != 0 || st.To != 0 {
				t.Fatalf("trial %d n=%d stage %d: segments' waves miss %+v of the whole", trial, n, k, st)
			}
		}
		for g, ws := range whole.Waves {
			for k, st := range ws.Stages {
				if st.From != 0 || st.To != 0 {
					t.Fatalf("trial %d n=%d wave %d stage %d: segments miss %+v of the whole", trial, n, g, k, st)
				}
			}
			if ws.PeakUsers != 0 {
				t.Fatalf("trial %d n=%d wave %d: segments' peaks miss %d users", trial, n, g, ws.PeakUsers)
			}
		}
		if int64(len(ids)) != NewWaves(p).Total() {
			t.Fatalf("trial %d n=%d: segments' peak ids cover %d, want 1..%d", trial, n, len(ids), NewWaves(p).Total())
		}
		for id := int64(1); id <= int64(len(ids)); id++ {
			if _, ok := ids[id]; !ok {
				t.Fatalf("trial %d n=%d: id %d is in no segment", trial, n, id)
			}
		}
		for j, v := range tenants {
			if v != whole.TenantUsers[j] {
				t.Fatalf("trial %d n=%d: tenant %d has %d users over the segments, %d in the whole", trial, n, j+1, v, whole.TenantUsers[j])
			}
			if per := p.PerTenantUsers(); per > 0 && v != int64(per) {
				t.Fatalf("trial %d n=%d: tenant %d has %d users, want per_tenant %d", trial, n, j+1, v, per)
			}
		}
	}
}

func TestWavePlanShareString(t *testing.T) {
	p, err := plan.Parse("w.yaml", []byte(`target: http://127.0.0.1:1
tenants: {count: 4, waves: [{share: 0.5, offset: 0s}, {share: 0.5, offset: 1s}]}
scenarios: {s: {per_tenant: 3, steps: [{get: /}]}}
load: {stages: [{duration: 2s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 12 users, 6 per wave; segment 1/4 runs wave users 2 and 6 of each:
	// 2 while one wave runs, 4 while both do.
	got := Of(p, Segment{1, 4}).String()
	if want := "segment 1/4: users 2 → 2 → 4 → 4 → 2 → 2 (peak 4), waves peak 2 + 2, tenants 1–4"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Total is the sum of the waves' peaks: the ids 1..Total are the waves'
// peak users, replacements come above.
func (w *Waves) Total() int64 { return w.total }
