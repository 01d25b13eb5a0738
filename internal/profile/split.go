package profile

import "time"

// Wave is one group of tenants whose load follows the test's profile
// shifted by Offset: a lunch rush moving across time zones.
type Wave struct {
	Share  float64
	Offset time.Duration
	// First and Last are the group's tenant ids, inclusive.
	First, Last int
	// Stages is the group's own profile, unshifted: the test's profile
	// scaled to the group's share of the users.
	Stages []Stage
}

// Duration is the length of the wave's own profile, without its offset.
func (w Wave) Duration() time.Duration { return Duration(w.Stages) }

// Bounds appends to cuts every instant, for a profile that starts at at,
// where it stops being one linear piece: each jump of a step ramp and each
// stage's end. Between two consecutive bounds the value is linear.
func Bounds(cuts []time.Duration, stages []Stage, at time.Duration) []time.Duration {
	for _, s := range stages {
		for k := 1; k < s.Steps; k++ {
			cuts = append(cuts, at+s.Duration*time.Duration(k)/time.Duration(s.Steps))
		}
		at += s.Duration
		cuts = append(cuts, at)
	}
	return cuts
}

// TenantOf is the tenant of user id (from 1) in a pool of tenants; 0
// without a pool. With perTenant > 0, consecutive blocks of perTenant users
// share a tenant.
func TenantOf(id int64, tenants, perTenant int) int {
	if tenants <= 0 || id <= 0 {
		return 0
	}
	k := id - 1
	if b := int64(perTenant); b > 0 {
		k /= b
	}
	return int(k%int64(tenants)) + 1
}

// Quantities are a test's load and every integer quantity that splitting
// it into segments divides, as plain data: what the split's arithmetic
// needs of a plan, without the plan.
type Quantities struct {
	Model  Model
	Stages []Stage
	// Waves are the tenant waves (closed model); Stages is then their sum.
	Waves []Wave
	// MaxInFlight bounds the open model's concurrent iterations.
	MaxInFlight int
	// MaxConnsPerHost is the per-host connection cap (0: none).
	MaxConnsPerHost int
	// Tenants is the pool's size (0: no pool); PerTenant the users each
	// tenant runs of the per_tenant scenarios together.
	Tenants, PerTenant int
	// Rows is, per data source, its rows and whether each is used once.
	Rows []Rows
	// Connections is each persistent-connection scenario's population.
	Connections []int
}

// Rows is one data source's size, and whether the source hands each row
// to one user only (so segments split the rows rather than share them).
type Rows struct {
	N      int
	Unique bool
}
