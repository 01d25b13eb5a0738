package segment

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/profile"
)

// PlanShare is one segment's part of every integer quantity of a plan. The
// run engine computes the same figures on the fly (users at every instant,
// arrival by arrival); this is the whole picture at once, for the message a
// segment prints when it starts, for `stampede k8s`, and for the tests that
// check the parts sum to the whole.
type PlanShare struct {
	Segment Segment
	Model   profile.Model
	// Stages holds the segment's users at each stage's start and end
	// (closed model: its stripe of the whole's users, Stripe), or the
	// number of the stage's arrivals it fires (open model, in To; From is
	// 0).
	Stages []StageShare
	// PeakUsers is the segment's stripe of the profile's peak users
	// (closed): what it runs when the whole peaks.
	PeakUsers int64
	// Arrivals is how many arrivals (iterations) of the whole run the
	// segment fires (open model).
	Arrivals int64
	// MaxInFlight is the segment's part of max_in_flight (open model).
	MaxInFlight int64
	// MaxConnsPerHost is the segment's part of the per-host connection cap
	// (0: no cap). It is at least 1 where the plan has a cap, so a cap
	// smaller than the segment count is exceeded by design (at most one
	// connection per segment).
	MaxConnsPerHost int64
	// Rows is, per data source, how many rows the segment may take: its
	// stripe of a unique source; every row of the others.
	Rows []int64
	// TenantUsers is, per tenant (index 0 is tenant 1), how many of the
	// segment's peak users belong to it; nil without a tenant pool. With
	// waves, each wave counts at its own peak: the waves' peaks need not
	// coincide, but every tenant is in one wave.
	TenantUsers []int64
	// Waves is the segment's part of each tenant wave (closed model); nil
	// without waves. The run keeps its stripe of each wave's users
	// separately (Waves), so with waves Stages holds the sum of the waves'
	// parts at each stage's start and end (Load.Stages is the waves' sum),
	// and PeakUsers the most of those: the segments' peaks need not fall at
	// the same instant, so they add up to the whole's only stage by stage.
	Waves []WaveShare
	// Connections is the segment's part of the persistent connections
	// (each connection scenario's population: per_tenant × tenants, or its
	// users): its stripe of each population's slots, as the run deals them
	// (slot k to segment k mod N).
	Connections int64
}

// StageShare is one stage's part.
type StageShare struct {
	From, To int64
}

// WaveShare is a segment's part of one tenant wave: its stripe of the
// wave's users (Waves).
type WaveShare struct {
	Offset time.Duration
	// First and Last are the wave's tenants, inclusive.
	First, Last int
	// Stages holds the segment's users of the wave at each of the wave's
	// own stages' start and end (wave time, before Offset shifts it).
	Stages []StageShare
	// PeakUsers is the segment's part of the wave's peak.
	PeakUsers int64
	// The whole-test ids of the segment's users at the wave's peak are
	// FirstID, FirstID+Count, … up to LastID (Waves.User); both are 0 when
	// it has none.
	FirstID, LastID int64
}

// PeakUsers is the most users the closed-model profile runs at once, as
// profile.UsersAt rounds them.
func PeakUsers(stages []profile.Stage) int64 {
	return profile.PeakUsers(stages)
}

// Test is a test to split; *plan.Plan is one. Only its quantities are
// read, so the split's arithmetic needs no plan (nor what a plan links).
type Test interface {
	Quantities() profile.Quantities
}

// Of computes s's part of the test p.
func Of(p Test, s Segment) PlanShare {
	s = s.Norm()
	q := p.Quantities()
	ps := PlanShare{Segment: s, Model: q.Model}
	if q.Model == profile.Open {
		ps.Stages, ps.Arrivals = arrivalShares(q.Stages, s)
		ps.MaxInFlight = s.Share(int64(q.MaxInFlight))
	} else {
		closedShares(&ps, q, s)
	}
	if c := int64(q.MaxConnsPerHost); c > 0 {
		ps.MaxConnsPerHost = max(1, s.Share(c))
	}
	for _, r := range q.Rows {
		n := int64(r.N)
		if r.Unique {
			n = s.Stripe(n)
		}
		ps.Rows = append(ps.Rows, n)
	}
	for _, c := range q.Connections {
		// Each population is striped on its own, so the segment's part
		// is the sum of its stripes, not a share of the total.
		ps.Connections += s.Stripe(int64(c))
	}
	return ps
}

// arrivalShares is how many arrivals of each open-model stage s fires,
// and of the whole profile.
func arrivalShares(stages []profile.Stage, s Segment) ([]StageShare, int64) {
	// Arrivals per stage: the global indexes due in the stage, striped.
	a := profile.NewArrivals(stages)
	count := a.Count()
	var out []StageShare
	var k, at int64
	for i, st := range stages {
		at += int64(st.Duration)
		if i == len(stages)-1 {
			at = math.MaxInt64 // the last stage takes what is left
		}
		// The first arrival due at or after the stage's end.
		end := k + int64(sort.Search(int(count-k), func(j int) bool {
			t, ok := a.Time(k + int64(j))
			return !ok || int64(t) >= at
		}))
		out = append(out, StageShare{To: s.Stripe(end) - s.Stripe(k)})
		k = end
	}
	return out, s.Stripe(count)
}

// closedShares fills in s's users of a closed-model test: by stage, at the
// peak, per tenant and per wave.
func closedShares(ps *PlanShare, q profile.Quantities, s Segment) {
	// Users are striped (package doc): the segment runs the first
	// Stripe(v) of its stripe whenever the whole runs v.
	for _, st := range q.Stages {
		ps.Stages = append(ps.Stages, StageShare{
			From: s.Stripe(int64(math.Round(st.From))),
			To:   s.Stripe(int64(math.Round(st.To))),
		})
	}
	ps.PeakUsers = s.Stripe(PeakUsers(q.Stages))
	if len(q.Waves) > 0 {
		ps.Waves, ps.TenantUsers = waveShares(q, s)
		ps.Stages, ps.PeakUsers = waveStages(q, s)
	} else if q.Tenants > 0 {
		ps.TenantUsers = make([]int64, q.Tenants)
		for j := int64(1); j <= ps.PeakUsers; j++ {
			if t := profile.TenantOf(s.UserID(j), q.Tenants, q.PerTenant); t > 0 {
				ps.TenantUsers[t-1]++
			}
		}
	}
}

// waveShares is s's part of every wave, and its peak users per tenant.
func waveShares(q profile.Quantities, s Segment) ([]WaveShare, []int64) {
	wu := newWaves(q)
	var tenants []int64
	if q.Tenants > 0 {
		tenants = make([]int64, q.Tenants)
	}
	out := make([]WaveShare, wu.Len())
	for g, wv := range q.Waves {
		ws := WaveShare{Offset: wv.Offset, First: wv.First, Last: wv.Last, PeakUsers: s.Stripe(wu.Peak(g))}
		if ws.PeakUsers > 0 {
			ws.FirstID, _ = wu.User(s, g, 1)
			ws.LastID, _ = wu.User(s, g, ws.PeakUsers)
		}
		for _, st := range wv.Stages {
			ws.Stages = append(ws.Stages, StageShare{
				From: s.Stripe(int64(math.Round(st.From))),
				To:   s.Stripe(int64(math.Round(st.To))),
			})
		}
		for j := int64(1); j <= ws.PeakUsers; j++ {
			if _, t := wu.User(s, g, j); t > 0 && t <= len(tenants) {
				tenants[t-1]++
			}
		}
		out[g] = ws
	}
	return out, tenants
}

// waveStages is what s runs of all waves together at each start and end
// of the test's stages (the waves' sum, plan.WaveTotal), and the most of it.
func waveStages(q profile.Quantities, s Segment) ([]StageShare, int64) {
	wu := newWaves(q)
	at := func(el time.Duration) int64 {
		var n int64
		for g := 0; g < wu.Len(); g++ {
			n += int64(wu.SegUsersAt(s, g, el))
		}
		return n
	}
	var out []StageShare
	var peak int64
	var start time.Duration
	for _, st := range q.Stages {
		ss := StageShare{From: at(start), To: at(start + st.Duration - 1)}
		peak = max(peak, ss.From, ss.To)
		out = append(out, ss)
		start += st.Duration
	}
	return out, peak
}

// String is a one-line account such as
// "segment 1/4: users 0 → 25 → 25 (peak 25), rows voters 250".
func (ps PlanShare) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "segment %s:", ps.Segment)
	if ps.Model == profile.Open {
		fmt.Fprintf(&b, " %d arrivals", ps.Arrivals)
		if len(ps.Stages) > 1 {
			parts := make([]string, len(ps.Stages))
			for i, st := range ps.Stages {
				parts[i] = fmt.Sprint(st.To)
			}
			fmt.Fprintf(&b, " (%s by stage)", strings.Join(parts, " + "))
		}
		fmt.Fprintf(&b, " (#%d, #%d, … of the whole schedule), max_in_flight %d",
			ps.Segment.Index, ps.Segment.Index+ps.Segment.Count, ps.MaxInFlight)
	} else {
		parts := []string{}
		for i, st := range ps.Stages {
			if i == 0 || ps.Stages[i-1].To != st.From {
				parts = append(parts, fmt.Sprint(st.From))
			}
			parts = append(parts, fmt.Sprint(st.To))
		}
		fmt.Fprintf(&b, " users %s (peak %d)", strings.Join(parts, " → "), ps.PeakUsers)
	}
	if len(ps.Waves) > 0 {
		parts := make([]string, len(ps.Waves))
		for i, w := range ps.Waves {
			parts[i] = fmt.Sprint(w.PeakUsers)
		}
		fmt.Fprintf(&b, ", waves peak %s", strings.Join(parts, " + "))
	}
	if ps.Connections > 0 {
		fmt.Fprintf(&b, ", connections %d", ps.Connections)
	}
	if ps.TenantUsers != nil {
		first, last := 0, 0
		for t, n := range ps.TenantUsers {
			if n > 0 {
				if first == 0 {
					first = t + 1
				}
				last = t + 1
			}
		}
		if first > 0 {
			fmt.Fprintf(&b, ", tenants %d–%d", first, last)
		}
	}
	return b.String()
}
