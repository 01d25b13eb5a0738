package plan

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The load section: model, stages, users and rates.

func (p *parser) load(n *yaml.Node) {
	l := &p.plan.Load
	l.Grace = defaultGrace
	f := p.fields(n, "load", []string{"stages", "pace", "max_in_flight", "grace"})
	e, ok := f["stages"]
	if !ok {
		if (deref(n).Kind == yaml.MappingNode || isNull(deref(n))) && p.missing(n, "stages") {
			p.errf(deref(n), `load has no stages: expected stages: [{duration: 1m, users: 10}] or [{duration: 1m, rate: 100/s}]`)
		}
		return
	}
	items, ok := p.list(e.v, "stages")
	if ok && len(items) == 0 {
		p.errf(deref(e.v), `no stages: expected at least one such as {duration: 1m, users: 10}`)
	}
	model, first := Closed, ""
	for _, it := range items {
		st, kind, ok := p.stage(it)
		if !ok {
			continue
		}
		if first == "" {
			first = kind
			if kind == "rate" {
				model = Open
			}
		} else if kind != first {
			p.errf(deref(it), "stage uses %s but the first stage uses %s: all stages must use the same load model (users for closed, rate for open)", kind, first)
			continue
		}
		l.Stages = append(l.Stages, st)
		p.plan.stagePos = append(p.plan.stagePos, p.pos(deref(it)))
	}
	l.Model = model
	if e, ok := f["pace"]; ok {
		if model == Open && first != "" {
			p.errf(e.k, "pace applies to the closed model only: these stages use rate, which already sets when iterations start")
		} else if deref(e.v).Kind == yaml.MappingNode {
			// A drawn pace: each user's iterations start at intervals drawn
			// from it (think.go); Pace is its mean, for what reads the
			// average (capacity estimates, the phase spread of users).
			if d := p.distribution(deref(e.v), "pace"); d != nil {
				l.Pace, l.PaceDist = d.Mean, d
			}
		} else if d, ok := p.duration(e.v, "pace", true); ok {
			l.Pace = d
		}
	}
	if model == Open {
		l.MaxInFlight = defaultMaxInFlight
	}
	if e, ok := f["max_in_flight"]; ok {
		if model == Closed && first != "" {
			p.errf(e.k, "max_in_flight applies to the open model only: with users, in-flight iterations are bounded by the user count")
		} else if v, ok := p.intMin(e.v, "max_in_flight", 1); ok {
			l.MaxInFlight = v
			p.plan.maxInFlightPos = p.pos(deref(e.v))
		}
	}
	if e, ok := f["grace"]; ok {
		if d, ok := p.duration(e.v, "grace", true); ok {
			l.Grace = d
		}
	}
}

// stage parses one stage and says which model it uses ("users" or "rate").
func (p *parser) stage(n *yaml.Node) (Stage, string, bool) {
	n = deref(n)
	var st Stage
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad stage: expected a mapping such as {duration: 1m, users: 10}, found %s", kindName(n))
		return st, "", false
	}
	f := p.fields(n, "stage", []string{"duration", "users", "rate", "steps"})
	good := true
	if e, ok := f["duration"]; ok {
		st.Duration, ok = p.duration(e.v, "stage duration", false)
		good = good && ok
	} else {
		if p.missing(n, "duration") {
			p.errf(n, "stage has no duration: expected duration: 1m or similar")
		}
		good = false
	}
	if e, ok := f["steps"]; ok {
		v, ok := p.intMin(e.v, "steps", 1)
		st.Steps = v
		good = good && ok
	}
	u, hasU := f["users"]
	r, hasR := f["rate"]
	var kind string
	switch {
	case hasU && hasR:
		p.errf(r.k, "stage has both users and rate: expected users (closed model) or rate (open model)")
		return st, "", false
	case hasU:
		kind = "users"
		s, ok := p.text(u.v, "users")
		if !ok {
			return st, "", false
		}
		from, to, ok := parseUsers(s)
		if !ok {
			p.errf(u.v, "bad users %s: expected a count such as 100 or a ramp such as \"0 -> 400\"", q(s))
			return st, "", false
		}
		st.From, st.To = from, to
	case hasR:
		kind = "rate"
		s, ok := p.text(r.v, "rate")
		if !ok {
			return st, "", false
		}
		from, to, ok := parseRate(s)
		if !ok {
			p.errf(r.v, "bad rate %s: expected arrivals per second, minute or hour such as 100/s, 30/m, or a ramp such as \"0 -> 1000/s\"", q(s))
			return st, "", false
		}
		st.From, st.To = from, to
	default:
		if p.missing(n, "users") && p.missing(n, "rate") {
			p.errf(n, "stage has no users or rate: expected users: N (closed model) or rate: N/s (open model)")
		}
		return st, "", false
	}
	return st, kind, good
}

func parseUsers(s string) (float64, float64, bool) {
	a, b, ramp := strings.Cut(s, "->")
	from, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil || from < 0 {
		return 0, 0, false
	}
	to := from
	if ramp {
		to, err = strconv.Atoi(strings.TrimSpace(b))
		if err != nil || to < 0 {
			return 0, 0, false
		}
	}
	return float64(from), float64(to), true
}

// parseRate reads "R/u" or "A -> B/u" into arrivals per second. The unit may
// be written on either side or both; a side without one takes the other's.
func parseRate(s string) (float64, float64, bool) {
	a, b, ramp := strings.Cut(s, "->")
	if !ramp {
		v, unit, ok := rateSide(a)
		if !ok || unit == 0 {
			return 0, 0, false
		}
		return v / unit, v / unit, true
	}
	from, ua, ok1 := rateSide(a)
	to, ub, ok2 := rateSide(b)
	if !ok1 || !ok2 || ua == 0 && ub == 0 {
		return 0, 0, false
	}
	if ua == 0 {
		ua = ub
	}
	if ub == 0 {
		ub = ua
	}
	return from / ua, to / ub, true
}

// rateSide returns a number and its unit in seconds, 0 when none is given.
func rateSide(s string) (float64, float64, bool) {
	s = strings.TrimSpace(s)
	num, unit, hasUnit := strings.Cut(s, "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || v-v != 0 {
		return 0, 0, false
	}
	if !hasUnit {
		return v, 0, true
	}
	switch strings.TrimSpace(unit) {
	case "s":
		return v, 1, true
	case "m":
		return v, 60, true
	case "h":
		return v, 3600, true
	}
	return 0, 0, false
}
