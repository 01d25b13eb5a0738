package plan

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/profile"
)

// Tenant pools: "2,000 restaurants × their devices and customers" as one
// plan. A scenario with per_tenant: K runs K users for every tenant, a data
// source with by_tenant: COLUMN hands each user only its tenant's rows, and
// waves shift groups of tenants in time (a lunch rush moving across time
// zones).

// Wave is one group of tenants whose load follows the plan's stage profile
// shifted by Offset (profile's type; where the first wave was written is
// kept on the plan, wavesPos).
type Wave = profile.Wave

func init() {
	scenarioExtensions = append(scenarioExtensions, scenarioExtension{key: "per_tenant", parse: (*parser).perTenant})
}

func (p *parser) perTenant(s *Scenario, n *yaml.Node) {
	if v, ok := p.intMin(n, "per_tenant", 1); ok {
		s.PerTenant = v
		s.perTenantPos = p.pos(deref(n))
		// A connection scenario parsed before this key reads its count
		// from here; one parsed after reads Scenario.PerTenant.
		if s.Connection != nil {
			s.Connection.PerTenant = v
		}
	}
}

func (p *parser) byTenantKey(ds *DataSource, n *yaml.Node) {
	if s, ok := p.text(n, "by_tenant"); ok {
		if s == "" {
			p.errf(n, "bad by_tenant: expected the name of the column that holds the tenant id")
			return
		}
		ds.ByTenant = s
		ds.byTenantPos = p.pos(deref(n))
	}
}

func (p *parser) waves(n *yaml.Node) {
	items, _ := p.list(n, "waves")
	if n := deref(n); n.Kind == yaml.SequenceNode && len(items) == 0 {
		p.errf(n, "no waves: expected a list such as [{share: 0.5, offset: 0s}, {share: 0.5, offset: 2m}]")
	}
	for _, it := range items {
		if len(p.plan.Waves) == 0 {
			p.plan.wavesPos = p.pos(deref(it))
		}
		var w Wave
		f := p.fields(it, "wave", []string{"share", "offset"})
		if e, ok := f["share"]; ok {
			if s, ok := p.text(e.v, "share"); ok {
				v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil || !(v > 0 && v <= 1) {
					p.errf(e.v, "bad share %s: expected a fraction of the tenants above 0 and at most 1, such as 0.3", q(s))
				}
				w.Share = v
			}
		} else if p.missing(it, "share") {
			p.errf(deref(it), "wave has no share: expected {share: 0.3, offset: 2m}")
		}
		if e, ok := f["offset"]; ok {
			w.Offset, _ = p.duration(e.v, "offset", true)
		}
		p.plan.Waves = append(p.plan.Waves, w)
	}
}

// finishTenants checks and resolves what depends on the whole plan: the
// tenant count, the scenarios and the load model.
func (p *parser) finishTenants() {
	pl := p.plan
	var perTenant []*Scenario
	var plain []*Scenario
	for _, s := range pl.Scenarios {
		switch {
		case s.persistent():
		case s.PerTenant > 0:
			perTenant = append(perTenant, s)
		default:
			plain = append(plain, s)
		}
	}
	if len(perTenant) > 0 {
		switch {
		case pl.Tenants == 0:
			if !p.tenants {
				p.errAt(perTenant[0].perTenantPos, "per_tenant needs a tenant pool: add tenants: {count: N} at the top level")
			}
		case len(plain) > 0:
			// Mixing would need two user counts from one stage profile;
			// with every scenario per tenant the stages give only the shape.
			p.errAt(plain[0].Pos, "scenario %s has no per_tenant but %s has: give every request scenario per_tenant, or none",
				q(plain[0].Name), q(perTenant[0].Name))
		case pl.Load.Model == Open && len(pl.Load.Stages) > 0:
			p.errAt(perTenant[0].perTenantPos, "per_tenant sets a number of users, so it needs users stages (closed model), not rate")
		default:
			for _, s := range perTenant {
				// The scenario order repeats every sum-of-weights users,
				// which TenantOf relies on to give each tenant exactly K.
				s.Weight = s.PerTenant
			}
			pl.Load.Stages = profile.Scale(pl.Load.Stages, float64(pl.PerTenantUsers()*pl.Tenants))
		}
	}
	for _, ds := range pl.Data {
		if ds.ByTenant != "" {
			p.partition(ds)
		}
	}
	if len(pl.Waves) > 0 && pl.Tenants > 0 {
		p.finishWaves()
	}
}

// PerTenantUsers is the number of users each tenant gets across the
// per_tenant scenarios; 0 when the plan has none.
func (pl *Plan) PerTenantUsers() int {
	n := 0
	for _, s := range pl.Scenarios {
		if !s.persistent() {
			n += s.PerTenant
		}
	}
	return n
}

// TenantOf is the tenant of user id (from 1); 0 without a tenant pool.
// With per_tenant scenarios, consecutive blocks of PerTenantUsers users
// share a tenant, and the scenario order (weights = per_tenant) repeats with
// the same period, so each tenant gets exactly K users of each scenario.
func (pl *Plan) TenantOf(id int64) int {
	return profile.TenantOf(id, pl.Tenants, pl.PerTenantUsers())
}

// partition groups the rows by tenant id and checks the column.
func (p *parser) partition(ds *DataSource) {
	if !p.tenants {
		p.errAt(ds.byTenantPos, "by_tenant needs a tenant pool: add tenants: {count: N} at the top level")
		return
	}
	if ds.Rows == nil {
		return // the file already failed
	}
	col := -1
	for i, c := range ds.Columns {
		if c == ds.ByTenant {
			col = i
		}
	}
	if col < 0 {
		msg := "by_tenant column " + q(ds.ByTenant) + " is not in " + ds.File + ": expected one of " + strings.Join(ds.Columns, ", ")
		if s := Suggest(ds.ByTenant, ds.Columns); s != "" {
			msg = "by_tenant column " + q(ds.ByTenant) + " is not in " + ds.File + ": did you mean " + q(s) + "?"
		}
		p.errAt(ds.byTenantPos, "%s", msg)
		return
	}
	ds.TenantRows = map[int][][]string{}
	for i, row := range ds.Rows {
		t, err := strconv.Atoi(strings.TrimSpace(row[col]))
		if err != nil || t < 1 {
			// Line i+2: the header is line 1.
			p.errAt(ds.byTenantPos, "data file %s line %d: %s is %s, expected a tenant id (a whole number from 1)", ds.File, i+2, ds.ByTenant, q(row[col]))
			return
		}
		ds.TenantRows[t] = append(ds.TenantRows[t], row)
	}
	need := p.plan.Tenants
	if g := p.plan.Gates; g != nil && g.Vary == VaryTenants {
		for _, v := range g.Levels {
			need = max(need, int(v))
		}
	}
	if missing := ds.MissingTenants(need); len(missing) > 0 {
		p.errAt(ds.byTenantPos, "%s", missingMsg(ds, need, missing))
	}
}

// MissingTenants lists the tenant ids 1..count that have no row.
func (ds *DataSource) MissingTenants(count int) []int {
	var out []int
	for t := 1; t <= count; t++ {
		if len(ds.TenantRows[t]) == 0 {
			out = append(out, t)
		}
	}
	return out
}

func missingMsg(ds *DataSource, count int, missing []int) string {
	shown := missing
	if len(shown) > 5 {
		shown = shown[:5]
	}
	ids := make([]string, len(shown))
	for i, t := range shown {
		ids[i] = strconv.Itoa(t)
	}
	more := ""
	if len(missing) > len(shown) {
		more = " and " + strconv.Itoa(len(missing)-len(shown)) + " more"
	}
	return "data source " + q(ds.Name) + " has no rows for tenant " + strings.Join(ids, ", ") + more +
		" (column " + ds.ByTenant + "): every tenant up to " + strconv.Itoa(count) + " needs at least one row"
}

// finishWaves splits the pool into contiguous groups of tenants and gives
// each group its share of the profile; Load.Stages becomes the sum of the
// shifted group profiles, so the run's length, target series and progress
// describe what is really sent.
func (p *parser) finishWaves() {
	pl := p.plan
	if pl.Load.Model == Open && len(pl.Load.Stages) > 0 {
		p.errAt(pl.wavesPos, "waves shift groups of users in time, so they need users stages (closed model), not rate")
		return
	}
	sum := 0.0
	for _, w := range pl.Waves {
		sum += w.Share
	}
	if math.Abs(sum-1) > 0.001 {
		p.errAt(pl.wavesPos, "wave shares add up to %g: expected them to add up to 1, so every tenant is in one wave", sum)
		return
	}
	if len(pl.Waves) > pl.Tenants {
		p.errAt(pl.wavesPos, "%d waves for %d tenants: expected at most one wave per tenant", len(pl.Waves), pl.Tenants)
		return
	}
	shape := pl.Load.Stages
	peak := profile.MaxTarget(shape)
	acc, first := 0.0, 1
	for i := range pl.Waves {
		w := &pl.Waves[i]
		acc += w.Share
		last := int(math.Round(acc * float64(pl.Tenants)))
		if i == len(pl.Waves)-1 {
			last = pl.Tenants
		}
		// Every wave keeps at least one tenant and leaves one for each
		// wave after it.
		last = max(last, first)
		last = min(last, pl.Tenants-(len(pl.Waves)-1-i))
		w.First, w.Last = first, last
		first = last + 1
		n := float64(w.Last - w.First + 1)
		w.Stages = profile.Scale(shape, peak*n/float64(pl.Tenants))
	}
	pl.Load.Stages = WaveTotal(pl.Waves)
	pl.stagePos, pl.madePos = nil, pl.wavesPos
}

// WaveTotal is the sum of the waves' shifted profiles as stages. Between
// two consecutive boundaries of any wave (stage ends and the jumps of step
// ramps) every wave is linear, so the sum is exactly one linear stage.
func WaveTotal(waves []Wave) []Stage {
	var cuts []time.Duration
	for _, w := range waves {
		cuts = profile.Bounds(append(cuts, w.Offset), w.Stages, w.Offset)
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	total := func(t time.Duration) float64 {
		v := 0.0
		for _, w := range waves {
			if t >= w.Offset && t < w.Offset+profile.Duration(w.Stages) {
				v += profile.TargetAt(w.Stages, t-w.Offset)
			}
		}
		return v
	}
	var out []Stage
	prev := time.Duration(0)
	for _, c := range cuts {
		if c <= prev {
			continue
		}
		out = append(out, Stage{Duration: c - prev, From: total(prev), To: total(c - 1)})
		prev = c
	}
	return out
}
