package segment

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/profile"
	"github.com/stampede-load/stampede/internal/sched"
)

// Property tests use a fixed seed: a failure reproduces, and the case
// count stays small enough for CI under -race.
func rng(t *testing.T) *rand.Rand { return rand.New(rand.NewPCG(8, uint64(len(t.Name())))) }

func TestParse(t *testing.T) {
	cases := []struct {
		in      string
		want    Segment
		wantErr bool
		why     string
	}{
		{"0/1", Segment{0, 1}, false, "the whole test"},
		{"3/4", Segment{3, 4}, false, "last of four: the index counts from 0"},
		{" 1 / 2 ", Segment{1, 2}, false, "spaces are tolerated"},
		{"4/4", Segment{}, true, "index must be below the count"},
		{"-1/4", Segment{}, true, "negative index"},
		{"0/0", Segment{}, true, "no segments"},
		{"1", Segment{}, true, "no count"},
		{"a/b", Segment{}, true, "not numbers"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("%s: Parse(%q) = %v, %v", c.why, c.in, got, err)
		}
	}
}

func TestShareSumsToWholeAndIsBalanced(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 3000; trial++ {
		n := 1 + r.IntN(64)
		var v int64
		switch trial % 3 {
		case 0:
			v = r.Int64N(20) // small counts, where rounding matters most
		case 1:
			v = r.Int64N(100_000)
		default:
			v = r.Int64N(1 << 40) // no overflow and no float error at scale
		}
		var sum, next int64
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			lo, hi := s.Range(v)
			if lo != next {
				t.Fatalf("v=%d n=%d: segment %d starts at %d, want %d (blocks must touch)", v, n, i, lo, next)
			}
			next = hi
			sh := s.Share(v)
			if sh != v/int64(n) && sh != v/int64(n)+1 {
				t.Fatalf("v=%d n=%d: share of %d is %d, want ⌊v/N⌋ or ⌈v/N⌉", v, n, i, sh)
			}
			sum += sh
		}
		if sum != v || next != v {
			t.Fatalf("v=%d n=%d: shares sum to %d (blocks end at %d)", v, n, sum, next)
		}
	}
}

func TestShareIsTheRoundingFormula(t *testing.T) {
	// round(V·(i+1)/N) − round(V·i/N) with halves up, spelled out: 5 users
	// over 2 segments are round(2.5)−0 = 3 and 5−3 = 2.
	if a, b := (Segment{0, 2}).Share(5), (Segment{1, 2}).Share(5); a != 3 || b != 2 {
		t.Errorf("5 over 2 = %d + %d, want 3 + 2", a, b)
	}
	// 10 over 4: round(2.5)=3, round(5)=5, round(7.5)=8 → 3, 2, 3, 2.
	want := []int64{3, 2, 3, 2}
	for i, w := range want {
		if got := (Segment{i, 4}).Share(10); got != w {
			t.Errorf("10 over 4, segment %d = %d, want %d", i, got, w)
		}
	}
}

func TestStripeOwnsExactlyItsItems(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(16)
		items := r.Int64N(200)
		owner := make([]int, items)
		for k := range owner {
			owner[k] = -1
		}
		var sum int64
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			var c int64
			for k := s.First(); k < items; k += s.Step() {
				if owner[k] >= 0 || !s.Owns(k) {
					t.Fatalf("items=%d n=%d: item %d walked by %d, owned by %d", items, n, k, i, owner[k])
				}
				owner[k] = i
				c++
			}
			if c != s.Stripe(items) {
				t.Fatalf("items=%d n=%d: segment %d walks %d items, Stripe says %d", items, n, i, c, s.Stripe(items))
			}
			sum += c
		}
		if sum != items {
			t.Fatalf("items=%d n=%d: stripes sum to %d", items, n, sum)
		}
		for k, o := range owner {
			if o < 0 {
				t.Fatalf("items=%d n=%d: item %d has no segment", items, n, k)
			}
		}
	}
}

func TestUserIDsPartitionTheWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(12)
		peak := r.Int64N(300)
		seen := map[int64]int{}
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			// The segment's stripe of the peak, then up to 20 users started
			// past it (replacements after a ramp down and up).
			for j := int64(1); j <= s.Stripe(peak)+r.Int64N(20); j++ {
				id := s.UserID(j)
				if prev, dup := seen[id]; dup {
					t.Fatalf("peak=%d n=%d: id %d given to segments %d and %d", peak, n, id, prev, i)
				}
				seen[id] = i
				if (j <= s.Stripe(peak)) != (id <= peak) {
					t.Fatalf("peak=%d n=%d: segment %d's user %d has id %d: the stripe of the peak must be ids up to the peak, replacements above", peak, n, i, j, id)
				}
			}
		}
		for id := int64(1); id <= peak; id++ {
			if _, ok := seen[id]; !ok {
				t.Fatalf("peak=%d n=%d: user %d of the whole runs in no segment", peak, n, id)
			}
		}
	}
	// One process numbers its users in the order it starts them.
	for j := int64(1); j < 100; j++ {
		if id := Whole.UserID(j); id != j {
			t.Fatalf("one process: user %d has id %d", j, id)
		}
	}
}

func TestSlotIDsPartitionThePool(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(12)
		slots := r.Int64N(300)
		seen := map[int64]int{}
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			for j := int64(1); j <= s.Share(slots)+r.Int64N(20); j++ {
				id := s.SlotID(j, slots)
				if prev, dup := seen[id]; dup {
					t.Fatalf("slots=%d n=%d: id %d given to segments %d and %d", slots, n, id, prev, i)
				}
				seen[id] = i
			}
		}
		for id := int64(1); id <= slots; id++ {
			if _, ok := seen[id]; !ok {
				t.Fatalf("slots=%d n=%d: slot %d of the whole is in no segment", slots, n, id)
			}
		}
	}
}

// The case that made users striped: Share of 1, 2, 3 users for segment 1/3
// is 1, 0, 1, so on a ramp it would retire its user at 2 and start another
// at 3. Its stripe only grows.
func TestStripeNeverRetiresOnARamp(t *testing.T) {
	s := Segment{1, 3}
	if a, b, c := s.Share(1), s.Share(2), s.Share(3); a != 1 || b != 0 || c != 1 {
		t.Fatalf("Share of 1, 2, 3 for 1/3 = %d, %d, %d; this test documents 1, 0, 1", a, b, c)
	}
	for n := 1; n <= 8; n++ {
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			for v := int64(1); v < 500; v++ {
				// User v (item v−1) is added to its own segment only.
				if d := s.Stripe(v) - s.Stripe(v-1); d != 0 && d != 1 || (d == 1) != s.Owns(v-1) {
					t.Fatalf("%s: stripe of %d users is %d, of %d users %d: user %d must add 1 to segment %d only",
						s, v, s.Stripe(v), v-1, s.Stripe(v-1), v, (v-1)%int64(n))
				}
			}
		}
	}
}

func randStages(r *rand.Rand, open bool) []plan.Stage {
	var st []plan.Stage
	for k := 1 + r.IntN(4); k > 0; k-- {
		s := plan.Stage{Duration: time.Duration(1+r.IntN(40)) * 250 * time.Millisecond}
		top := 500.0
		if open {
			top = 300
		}
		s.From = float64(r.IntN(int(top)))
		s.To = s.From
		if r.IntN(2) == 0 {
			s.To = float64(r.IntN(int(top)))
			if r.IntN(3) == 0 {
				s.Steps = 1 + r.IntN(5)
			}
		}
		if r.IntN(4) == 0 {
			s.To += 0.5 // fractional targets round like sched.UsersAt
		}
		st = append(st, s)
	}
	return st
}

// rampStages is a continuous closed profile: ramps, step ramps, holds, and
// ramps down and up again, each stage starting where the last one ended.
func rampStages(r *rand.Rand) []plan.Stage {
	var st []plan.Stage
	at := 0.0
	for k := 2 + r.IntN(4); k > 0; k-- {
		s := plan.Stage{Duration: time.Duration(1+r.IntN(20)) * 250 * time.Millisecond, From: at}
		switch r.IntN(4) {
		case 0: // hold
			s.To = at
		case 1: // step ramp
			s.To = float64(r.IntN(60))
			s.Steps = 1 + r.IntN(5)
		default: // ramp up or down
			s.To = float64(r.IntN(60))
		}
		at = s.To
		st = append(st, s)
	}
	return st
}

// closedSim plays the closed model's control loop for one segment as
// runClosed does: start users up to the target, retire the newest first.
type closedSim struct {
	seg     Segment
	started int64
	running []int64 // whole-test ids, oldest first
}

func (c *closedSim) to(want int) (retired bool) {
	for len(c.running) < want {
		c.started++
		c.running = append(c.running, c.seg.UserID(c.started))
	}
	for len(c.running) > want {
		c.running = c.running[:len(c.running)-1]
		retired = true
	}
	return retired
}

// At every 50 ms of random profiles (ramps, step ramps, ramps down and up)
// split 1 to 8 ways: the segments' users sum to the whole's; no segment
// retires a user while the whole's users do not fall (no churn on a ramp
// up); no two segments run one id; and until the whole starts a
// replacement (a ramp up after a ramp down), the segments together run
// exactly the users 1..v that one process runs.
func TestUsersAtEveryInstantStripeTheWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 300; trial++ {
		var stages []plan.Stage
		if trial%4 == 3 {
			stages = randStages(r, false) // jumps between stages, fractional targets
		} else {
			stages = rampStages(r)
		}
		n := 1 + trial%8
		whole := &closedSim{seg: Whole}
		segs := make([]*closedSim, n)
		for i := range segs {
			segs[i] = &closedSim{seg: Segment{i, n}}
		}
		fail := func(at time.Duration, format string, args ...any) {
			t.Helper()
			t.Fatalf("stages %+v n=%d at %v: "+format, append([]any{stages, n, at}, args...)...)
		}
		total := plan.Load{Stages: stages}.Duration()
		prev, most := 0, 0
		for at := time.Duration(0); at <= total; at += 50 * time.Millisecond {
			v := sched.UsersAt(stages, at)
			whole.to(v)
			sum := 0
			ids := map[int64]int{}
			for i, sg := range segs {
				want := int(sg.seg.Stripe(int64(v)))
				sum += want
				if sg.to(want) && v >= prev {
					fail(at, "segment %d retired a user while the whole went from %d to %d users", i, prev, v)
				}
				for _, id := range sg.running {
					if o, dup := ids[id]; dup {
						fail(at, "user %d runs in segments %d and %d", id, o, i)
					}
					ids[id] = i
				}
			}
			if sum != v {
				fail(at, "segments run %d users, the whole %d", sum, v)
			}
			most = max(most, v)
			if whole.started == int64(most) {
				// No replacement yet: one process runs users 1..v.
				for k, id := range whole.running {
					if id != int64(k+1) {
						fail(at, "one process runs %v, want 1..%d", whole.running, v)
					}
					if _, ok := ids[id]; !ok {
						fail(at, "user %d of one process runs in no segment", id)
					}
				}
			}
			prev = v
		}
	}
}

func TestArrivalsStripedSumToWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 100; trial++ {
		stages := randStages(r, true)
		n := 1 + r.IntN(8)
		whole := profile.NewArrivals(stages).Count()
		global := sched.NewArrivals(stages)
		var sum int64
		for i := 0; i < n; i++ {
			s := Segment{i, n}
			own := sched.NewArrivals(stages)
			var c int64
			for k := s.First(); ; k += s.Step() {
				at, ok := own.Time(k)
				if !ok {
					break
				}
				// The segment fires arrival k at the whole schedule's time.
				if g, _ := global.Time(k); g != at {
					t.Fatalf("arrival %d: segment time %v, whole %v", k, at, g)
				}
				c++
			}
			if c != s.Stripe(whole) {
				t.Fatalf("stages %+v n=%d: segment %d fires %d, Stripe says %d", stages, n, i, c, s.Stripe(whole))
			}
			sum += c
		}
		if sum != whole {
			t.Fatalf("stages %+v n=%d: segments fire %d arrivals, the whole %d", stages, n, sum, whole)
		}
	}
}

// randPlan builds a plan with every integer quantity a segment splits.
func randPlan(r *rand.Rand) *plan.Plan {
	p := &plan.Plan{Name: "prop"}
	open := r.IntN(2) == 0
	p.Load.Stages = randStages(r, open)
	if open {
		p.Load.Model = plan.Open
		p.Load.MaxInFlight = r.IntN(20000)
	} else if r.IntN(2) == 0 {
		p.Tenants = 1 + r.IntN(50)
		k := 1 + r.IntN(3)
		p.Scenarios = append(p.Scenarios, &plan.Scenario{Name: "per-tenant", PerTenant: k, Weight: k})
		p.Load.Stages = []plan.Stage{{Duration: time.Second, From: 0, To: float64(k * p.Tenants)},
			{Duration: time.Second, From: float64(k * p.Tenants), To: float64(k * p.Tenants)}}
	}
	if r.IntN(2) == 0 {
		p.Scenarios = append(p.Scenarios, &plan.Scenario{Name: "hub",
			Connection: &plan.ConnectionSpec{Kind: "signalr", PerTenant: 1 + r.IntN(40)}})
	}
	p.HTTP.MaxConnsPerHost = r.IntN(3) * r.IntN(1000)
	for d := r.IntN(3); d > 0; d-- {
		ds := &plan.DataSource{Name: "d", Pick: plan.Pick(r.IntN(3))}
		ds.Rows = make([][]string, r.IntN(1000))
		p.Data = append(p.Data, ds)
	}
	return p
}

func TestPlanSharesSumToWhole(t *testing.T) {
	r := rng(t)
	for trial := 0; trial < 150; trial++ {
		p := randPlan(r)
		n := 1 + r.IntN(10)
		whole := Of(p, Whole)
		var sum PlanShare
		sum.Stages = make([]StageShare, len(whole.Stages))
		sum.Rows = make([]int64, len(whole.Rows))
		if whole.TenantUsers != nil {
			sum.TenantUsers = make([]int64, len(whole.TenantUsers))
		}
		for i := 0; i < n; i++ {
			ps := Of(p, Segment{i, n})
			for j, st := range ps.Stages {
				sum.Stages[j].From += st.From
				sum.Stages[j].To += st.To
			}
			sum.PeakUsers += ps.PeakUsers
			sum.Arrivals += ps.Arrivals
			sum.MaxInFlight += ps.MaxInFlight
			sum.Connections += ps.Connections
			for j, v := range ps.Rows {
				if p.Data[j].Pick == plan.PickUnique {
					sum.Rows[j] += v
				} else if v != whole.Rows[j] {
					t.Fatalf("a %s source must offer every row to each segment: %d of %d", p.Data[j].Pick, v, whole.Rows[j])
				}
			}
			for j, v := range ps.TenantUsers {
				sum.TenantUsers[j] += v
			}
			if ps.MaxConnsPerHost > 0 {
				sum.MaxConnsPerHost += ps.MaxConnsPerHost
			}
		}
		check := func(what string, got, want int64) {
			t.Helper()
			if got != want {
				t.Fatalf("plan %+v n=%d: %s sums to %d, whole %d", p.Load, n, what, got, want)
			}
		}
		for j := range whole.Stages {
			check("stage from", sum.Stages[j].From, whole.Stages[j].From)
			check("stage to", sum.Stages[j].To, whole.Stages[j].To)
		}
		check("peak users", sum.PeakUsers, whole.PeakUsers)
		check("arrivals", sum.Arrivals, whole.Arrivals)
		check("max_in_flight", sum.MaxInFlight, whole.MaxInFlight)
		check("connections", sum.Connections, whole.Connections)
		for j := range whole.Rows {
			if p.Data[j].Pick == plan.PickUnique {
				check("unique rows", sum.Rows[j], whole.Rows[j])
			}
		}
		for j := range whole.TenantUsers {
			check("users of a tenant", sum.TenantUsers[j], whole.TenantUsers[j])
			// Every tenant gets exactly its per_tenant users at the peak.
			check("users of a tenant in the whole", whole.TenantUsers[j], int64(p.PerTenantUsers()))
		}
		// A cap splits exactly once it is at least one per segment.
		if c := int64(p.HTTP.MaxConnsPerHost); c >= int64(n) {
			check("max connections per host", sum.MaxConnsPerHost, c)
		}
		if whole.Model == plan.Open {
			var stagesSum int64
			for _, st := range whole.Stages {
				stagesSum += st.To
			}
			check("arrivals by stage", stagesSum, whole.Arrivals)
		}
	}
}

func TestPlanShareString(t *testing.T) {
	p := &plan.Plan{Load: plan.Load{Stages: []plan.Stage{
		{Duration: time.Minute, From: 0, To: 10}, {Duration: time.Minute, From: 10, To: 10}}}}
	got := Of(p, Segment{1, 4}).String()
	// Users 1..10 striped 4 ways: segment 1 runs 2, 6 and 10.
	if want := "segment 1/4: users 0 → 3 → 3 (peak 3)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	p = &plan.Plan{Load: plan.Load{Model: plan.Open, MaxInFlight: 100,
		Stages: []plan.Stage{{Duration: 2 * time.Second, From: 100, To: 100}}}}
	got = Of(p, Segment{0, 2}).String()
	if want := "segment 0/2: 100 arrivals (#0, #2, … of the whole schedule), max_in_flight 50"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
