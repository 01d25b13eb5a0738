package plan

import "github.com/stampede-load/stampede/internal/profile"

// Quantities are the plan's load and the integer quantities a split into
// segments divides (package dist/segment does the dividing on these alone,
// so it needs nothing else of the plan).
func (pl *Plan) Quantities() profile.Quantities {
	q := profile.Quantities{
		Model:           pl.Load.Model,
		Stages:          pl.Load.Stages,
		Waves:           pl.Waves,
		MaxInFlight:     pl.Load.MaxInFlight,
		MaxConnsPerHost: pl.HTTP.MaxConnsPerHost,
		Tenants:         pl.Tenants,
		PerTenant:       pl.PerTenantUsers(),
	}
	for _, ds := range pl.Data {
		// FileRows, not Rows: Rows may be a segment's share already.
		q.Rows = append(q.Rows, profile.Rows{N: ds.FileRows(), Unique: ds.Pick == PickUnique})
	}
	for _, sc := range pl.Scenarios {
		if sc.Connection != nil {
			q.Connections = append(q.Connections, sc.Connection.Count(max(pl.Tenants, 1)))
		}
	}
	return q
}
