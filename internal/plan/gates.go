package plan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/profile"
)

// What a gate, sweep or capacity level varies (profile's names).
const (
	VaryUsers   = profile.VaryUsers
	VaryRate    = profile.VaryRate
	VaryTenants = profile.VaryTenants
)

// Gates are scaling gates run in order (a restaurant-ordering system: 50,
// then 250, then 2,000 restaurants), each held for Hold after an unmeasured
// Ramp, each judged by SLO on its own figures.
type Gates struct {
	Vary   string
	Levels []float64
	Hold   time.Duration
	Ramp   time.Duration
	// SLO is kept as written; package gate parses and evaluates it, as it
	// does thresholds.
	SLO []Located
	Pos Pos
}

func init() {
	topExtensions = append(topExtensions, topExtension{key: "gates", parse: (*parser).gates})
}

func (p *parser) gates(n *yaml.Node) {
	g := &Gates{Pos: p.pos(deref(n))}
	f := p.fields(n, "gates", []string{"vary", "levels", "hold", "ramp", "slo"})
	if e, ok := f["vary"]; ok {
		if s, ok := p.text(e.v, "vary"); ok {
			switch s {
			case VaryUsers, VaryRate, VaryTenants:
				g.Vary = s
			default:
				msg := "bad vary " + q(s) + ": expected users, rate or tenants"
				if h := Suggest(s, []string{VaryUsers, VaryRate, VaryTenants}); h != "" {
					msg += " (did you mean " + q(h) + "?)"
				}
				p.errf(e.v, "%s", msg)
			}
		}
	} else if p.missing(n, "vary") {
		p.errf(deref(n), "gates has no vary: expected vary: users, rate or tenants")
	}
	if e, ok := f["levels"]; ok {
		items, ok := p.list(e.v, "levels")
		if ok && len(items) == 0 {
			p.errf(deref(e.v), "no levels: expected a list such as [50, 250, 2000]")
		}
		for _, it := range items {
			if v, ok := p.level(it, g.Vary); ok {
				g.Levels = append(g.Levels, v)
			}
		}
	} else if p.missing(n, "levels") {
		p.errf(deref(n), "gates has no levels: expected levels: [50, 250, 2000]")
	}
	if e, ok := f["hold"]; ok {
		g.Hold, _ = p.duration(e.v, "hold", false)
	} else if p.missing(n, "hold") {
		p.errf(deref(n), "gates has no hold: expected how long each level runs, such as hold: 5m")
	}
	if e, ok := f["ramp"]; ok {
		g.Ramp, _ = p.duration(e.v, "ramp", true)
	}
	if e, ok := f["slo"]; ok {
		items, _ := p.list(e.v, "slo")
		for _, it := range items {
			if s, ok := p.text(it, "slo"); ok {
				g.SLO = append(g.SLO, Located{Value: s, Pos: p.pos(deref(it))})
			}
		}
	}
	if len(g.SLO) == 0 && p.missing(n, "slo") {
		// A gate that cannot fail gates nothing.
		p.errf(deref(n), "%s", `gates has no slo: expected slo: ["p50 < 200ms", "error_rate < 1.3%"]`)
	}
	if g.Vary == VaryTenants && !p.tenants {
		p.errf(deref(n), "gates vary tenants but the plan has no tenant pool: add tenants: {count: N}")
	}
	p.plan.Gates = g
}

// level reads one level: a whole number of users or tenants, or a rate
// such as 100/s (a bare number is per second).
func (p *parser) level(n *yaml.Node, vary string) (float64, bool) {
	s, ok := p.text(n, "level")
	if !ok {
		return 0, false
	}
	if vary == VaryRate {
		v, to, ok := parseRate(s)
		if !ok || v != to || v <= 0 {
			p.errf(n, "bad rate level %s: expected arrivals per second above 0, such as 100/s", q(s))
			return 0, false
		}
		return v, true
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 1 {
		p.errf(n, "bad level %s: expected a whole number of %s of at least 1", q(s), orDefault(vary, "users"))
		return 0, false
	}
	return float64(v), true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// AtLevel returns a copy of the plan that holds one level for hold, after
// an optional ramp from zero (ramp 0: none). Users and tenants keep the
// closed model (a tenants level of a plan without per_tenant keeps the
// plan's peak load); a rate level runs the open model, converting a closed
// plan. Waves are dropped: a level is a steady state. The plan itself is
// not changed.
func (pl *Plan) AtLevel(vary string, value float64, ramp, hold time.Duration) (*Plan, error) {
	if hold <= 0 {
		return nil, fmt.Errorf("hold must be above zero")
	}
	q := *pl
	q.Waves = nil
	q.Load.Pace = pl.Load.Pace
	peak := profile.MaxTarget(pl.Load.Stages)
	model := pl.Load.Model
	switch vary {
	case VaryUsers:
		if value < 1 || value != float64(int(value)) {
			return nil, fmt.Errorf("users level %g: expected a whole number of at least 1", value)
		}
		if pl.PerTenantUsers() > 0 {
			return nil, fmt.Errorf("the plan sets users per tenant (per_tenant), so vary tenants instead of users")
		}
		model, peak = Closed, value
	case VaryRate:
		if value <= 0 {
			return nil, fmt.Errorf("rate level %g: expected arrivals per second above 0", value)
		}
		if pl.PerTenantUsers() > 0 {
			return nil, fmt.Errorf("the plan sets users per tenant (per_tenant), so its load is users, not a rate; vary tenants instead")
		}
		model, peak = Open, value
	case VaryTenants:
		if pl.Tenants == 0 {
			return nil, fmt.Errorf("the plan has no tenant pool: add tenants: {count: N} to vary tenants")
		}
		if value < 1 || value != float64(int(value)) {
			return nil, fmt.Errorf("tenants level %g: expected a whole number of at least 1", value)
		}
		q.Tenants = int(value)
		if k := pl.PerTenantUsers(); k > 0 {
			peak = float64(k) * value
		}
		for _, ds := range pl.Data {
			if ds.ByTenant != "" {
				if m := ds.MissingTenants(q.Tenants); len(m) > 0 {
					return nil, fmt.Errorf("%s", missingMsg(ds, q.Tenants, m))
				}
			}
		}
	default:
		return nil, fmt.Errorf("vary %q: expected users, rate or tenants", vary)
	}
	if model == Open {
		q.Load.Pace = 0
		if pl.Load.Model != Open || q.Load.MaxInFlight == 0 {
			q.Load.MaxInFlight = defaultMaxInFlight
		}
	} else if pl.Load.Model == Open {
		q.Load.MaxInFlight = 0
	}
	q.Load.Model = model
	q.Load.Stages, q.stagePos = nil, nil
	if pl.Gates != nil {
		q.madePos = pl.Gates.Pos
	}
	if ramp > 0 {
		q.Load.Stages = append(q.Load.Stages, Stage{Duration: ramp, From: 0, To: peak})
	}
	q.Load.Stages = append(q.Load.Stages, Stage{Duration: hold, From: peak, To: peak})
	return &q, nil
}
