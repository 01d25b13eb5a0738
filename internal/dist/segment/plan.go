package segment

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sched"
)

// PlanShare is one segment's part of every integer quantity of a plan. The
// run engine computes the same figures on the fly (users at every instant,
// arrival by arrival); this is the whole picture at once, for the message a
// segment prints when it starts, for `stampede k8s`, and for the tests that
// check the parts sum to the whole.
type PlanShare struct {
	Segment Segment
	Model   plan.Model
	// Stages holds the segment's users at each stage's start and end
	// (closed model), or the number of the stage's arrivals it fires (open
	// model, in To; From is 0).
	Stages []StageShare
	// PeakUsers is the segment's part of the profile's peak users (closed).
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
	// segment's peak users belong to it; nil without a tenant pool.
	TenantUsers []int64
	// Connections is the segment's part of the persistent connections
	// (per_tenant × tenants of each connection scenario).
	Connections int64
}

// StageShare is one stage's part.
type StageShare struct {
	From, To int64
}

// ArrivalCount is the number of arrivals the open-model profile makes:
// how many k have a due time.
func ArrivalCount(stages []plan.Stage) int64 {
	total := sched.NewArrivals(stages).Total()
	n := int64(math.Ceil(total - 1e-9))
	return max(n, 0)
}

// PeakUsers is the most users the closed-model profile runs at once, as
// sched.UsersAt rounds them.
func PeakUsers(stages []plan.Stage) int64 {
	return int64(math.Round(sched.MaxTarget(stages)))
}

// Of computes s's part of p.
func Of(p *plan.Plan, s Segment) PlanShare {
	s = s.Norm()
	ps := PlanShare{Segment: s, Model: p.Load.Model}
	if p.Load.Model == plan.Open {
		// Arrivals per stage: the global indexes due in the stage, striped.
		a := sched.NewArrivals(p.Load.Stages)
		count := ArrivalCount(p.Load.Stages)
		var k, at int64
		for i, st := range p.Load.Stages {
			at += int64(st.Duration)
			if i == len(p.Load.Stages)-1 {
				at = math.MaxInt64 // the last stage takes what is left
			}
			// The first arrival due at or after the stage's end.
			end := k + int64(sort.Search(int(count-k), func(j int) bool {
				t, ok := a.Time(k + int64(j))
				return !ok || int64(t) >= at
			}))
			ps.Stages = append(ps.Stages, StageShare{To: s.Stripe(end) - s.Stripe(k)})
			k = end
		}
		ps.Arrivals = s.Stripe(ArrivalCount(p.Load.Stages))
		ps.MaxInFlight = s.Share(int64(p.Load.MaxInFlight))
	} else {
		for _, st := range p.Load.Stages {
			ps.Stages = append(ps.Stages, StageShare{
				From: s.Share(int64(math.Round(st.From))),
				To:   s.Share(int64(math.Round(st.To))),
			})
		}
		peak := PeakUsers(p.Load.Stages)
		ps.PeakUsers = s.Share(peak)
		if p.Tenants > 0 {
			ps.TenantUsers = make([]int64, p.Tenants)
			for j := int64(1); j <= ps.PeakUsers; j++ {
				if t := p.TenantOf(s.UserID(j, peak)); t > 0 {
					ps.TenantUsers[t-1]++
				}
			}
		}
	}
	if c := int64(p.HTTP.MaxConnsPerHost); c > 0 {
		ps.MaxConnsPerHost = max(1, s.Share(c))
	}
	for _, ds := range p.Data {
		n := int64(len(ds.Rows))
		if ds.Pick == plan.PickUnique {
			n = s.Stripe(n)
		}
		ps.Rows = append(ps.Rows, n)
	}
	var conns int64
	for _, sc := range p.Scenarios {
		if sc.Connection != nil {
			conns += int64(sc.Connection.PerTenant) * int64(max(p.Tenants, 1))
		}
	}
	ps.Connections = s.Share(conns)
	return ps
}

// String is a one-line account such as
// "segment 1/4: users 0 → 25 → 25 (peak 25), rows voters 250".
func (ps PlanShare) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "segment %s:", ps.Segment)
	if ps.Model == plan.Open {
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
