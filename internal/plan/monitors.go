package plan

import (
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/monitorkind"
)

// monitorKinds lists the kinds in the order help text gives them.
var monitorKinds = monitorkind.Kinds()

// MonitorSpec is one entry of the plan's monitors list: a server-side
// metric source sampled beside the load. Target has ${ENV} expanded (the
// plan's Source keeps the reference, so a password from the environment
// reaches no result file).
type MonitorSpec struct {
	Kind string
	// Target is the postgres URL or DSN, redis address, metrics URL, or
	// process name or pid; empty for host.
	Target string
	// Name tells two monitors of one kind apart in series keys
	// ("postgres[orders].connections.active").
	Name     string
	Interval time.Duration // 0: the default (1s)
	Timeout  time.Duration // 0: the interval
	// Required makes a monitor that cannot start stop the run before any
	// load is sent, instead of a warning.
	Required bool
	// Select (prometheus) keeps only the metrics these selectors match.
	Select []string
	// Queries (postgres) are extra series: name → SQL returning one number.
	Queries map[string]string
	// Pos is where the entry's kind key (or the bare kind) is written.
	Pos Pos
}

// Label is the prefix of the monitor's series keys, as package collect
// builds it: "postgres", "postgres[orders]", "process[nginx]".
func (m MonitorSpec) Label() string { return monitorkind.Label(m.Kind, m.Name, m.Target) }

var monitorOptions = []string{"name", "required", "interval", "timeout", "select", "queries"}

var monitorQueryNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func init() {
	topExtensions = append(topExtensions, topExtension{key: "monitors", parse: (*parser).monitors})
}

func (p *parser) monitors(n *yaml.Node) {
	items, _ := p.list(n, "monitors")
	firstLine := map[string]int{}
	for _, it := range items {
		m, ok := p.monitor(it)
		if !ok {
			continue
		}
		l := m.Label()
		if m.Kind == monitorkind.Process && (m.Name == monitorkind.Self || m.Name == "" && m.Target == monitorkind.Self) {
			p.errAt(m.Pos, "monitor name %s is reserved for the generator's own process, which every run records: give this process another name", q(monitorkind.Self))
			continue
		}
		if line, dup := firstLine[l]; dup {
			p.errAt(m.Pos, "monitor %s given twice (first at line %d): give one of them a name, such as name: replica", l, line)
			continue
		}
		firstLine[l] = m.Pos.Line
		p.plan.Monitors = append(p.plan.Monitors, m)
	}
}

// monitor reads one entry: a bare kind ("host"), or a mapping with exactly
// one kind key holding the target and any options beside it.
func (p *parser) monitor(n *yaml.Node) (MonitorSpec, bool) {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return p.bareMonitor(n)
	}
	m := MonitorSpec{Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad monitor: expected host or a mapping such as {redis: 127.0.0.1:6379}, found %s", kindName(n))
		return m, false
	}
	f := p.fields(n, "monitor", append(append([]string{}, monitorKinds...), monitorOptions...))
	e, found := p.monitorKind(n, f)
	if !found {
		return m, false
	}
	m.Kind, m.Pos = e.key, p.pos(e.k)
	ok := p.monitorTarget(&m, e)
	if !p.monitorSettings(&m, f, e) {
		ok = false
	}
	return m, ok
}

// bareMonitor reads a monitor written as its kind alone: only host needs
// no target.
func (p *parser) bareMonitor(n *yaml.Node) (MonitorSpec, bool) {
	m := MonitorSpec{Pos: p.pos(n)}
	s, ok := p.text(n, "monitor")
	if !ok {
		return m, false
	}
	switch kind := strings.TrimSpace(s); {
	case kind == monitorkind.Host:
		m.Kind = kind
		return m, true
	case monitorkind.Is(kind):
		p.errf(n, "monitor %s needs a target: write - %s: %s", kind, kind, monitorExample(kind))
	default:
		p.errf(n, "unknown monitor %s: %s", q(s), monitorKindHint(s))
	}
	return m, false
}

// monitorKind finds the entry's one kind key.
func (p *parser) monitorKind(n *yaml.Node, f map[string]kv) (kv, bool) {
	var kinds []kv
	for _, k := range monitorKinds {
		if e, ok := f[k]; ok {
			kinds = append(kinds, e)
		}
	}
	switch {
	case len(kinds) == 0:
		if !p.hintedKind(n) {
			p.errf(n, "monitor has no kind: expected one of %s as a key, such as {redis: 127.0.0.1:6379}", strings.Join(monitorKinds, ", "))
		}
		return kv{}, false
	case len(kinds) > 1:
		p.errf(kinds[1].k, "one monitor per list item: this one has both %s and %s (start the second with its own -)", kinds[0].key, kinds[1].key)
		return kv{}, false
	}
	return kinds[0], true
}

// monitorTarget reads the kind key's value: what the monitor watches
// (host takes none, every other kind needs one).
func (p *parser) monitorTarget(m *MonitorSpec, e kv) bool {
	ok := true
	target, tok := p.text(e.v, m.Kind)
	target = strings.TrimSpace(target)
	switch {
	case !tok:
		ok = false
	case m.Kind == monitorkind.Host && target != "":
		p.errf(e.v, "monitor host takes no target (it watches this machine): write - host")
		ok = false
	case m.Kind != monitorkind.Host && target == "":
		p.errf(e.k, "monitor %s needs a target, such as %s: %s", m.Kind, m.Kind, monitorExample(m.Kind))
		ok = false
	}
	m.Target = target
	return ok
}

// monitorSettings reads the options beside the kind key; kind is that
// key's entry.
func (p *parser) monitorSettings(m *MonitorSpec, f map[string]kv, kind kv) bool {
	ok := true
	if e, has := f["name"]; has {
		if s, tok := p.text(e.v, "monitor name"); tok {
			m.Name = strings.TrimSpace(s)
			if m.Name == "" {
				p.errf(e.v, "empty monitor name: leave the key out or give a name such as primary")
				ok = false
			}
		} else {
			ok = false
		}
	}
	if m.Kind == monitorkind.Process && m.Name == "" && strings.ContainsAny(m.Target, "[] \t") {
		p.errf(kind.v, "process %s cannot key a series: add name: with a short name for it", q(m.Target))
		ok = false
	}
	if e, has := f["required"]; has {
		b, bok := p.boolean(e.v, "required")
		m.Required, ok = b, ok && bok
	}
	if e, has := f["interval"]; has {
		d, dok := p.duration(e.v, "interval", false)
		if dok && d < monitorkind.MinInterval {
			p.errf(e.v, "bad interval %s: monitors sample at most every %v", q(d.String()), monitorkind.MinInterval)
			dok = false
		}
		m.Interval, ok = d, ok && dok
	}
	if e, has := f["timeout"]; has {
		d, dok := p.duration(e.v, "timeout", false)
		m.Timeout, ok = d, ok && dok
	}
	if e, has := f["select"]; has {
		if m.Kind != monitorkind.Prometheus {
			p.errf(e.k, "select applies only to prometheus monitors, not %s", m.Kind)
			ok = false
		} else if !p.monitorSelect(m, e.v) {
			ok = false
		}
	}
	if e, has := f["queries"]; has {
		if m.Kind != monitorkind.Postgres {
			p.errf(e.k, "queries apply only to postgres monitors, not %s", m.Kind)
			ok = false
		} else if !p.monitorQueries(m, e.v) {
			ok = false
		}
	}
	return ok
}

// hintedKind reports whether an unknown key of this mapping was already
// taken for a kind ("postgress" → did you mean postgres?), so the entry is
// not also reported as having no kind.
func (p *parser) hintedKind(n *yaml.Node) bool {
	for _, k := range monitorKinds {
		if !p.missing(n, k) {
			return true
		}
	}
	return false
}

// monitorSelect accepts one selector or a list of them.
func (p *parser) monitorSelect(m *MonitorSpec, n *yaml.Node) bool {
	n = deref(n)
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		var ok bool
		if items, ok = p.list(n, "select"); !ok {
			return false
		}
	}
	ok := true
	for _, it := range items {
		s, tok := p.text(it, "selector")
		s = strings.TrimSpace(s)
		switch {
		case !tok:
			ok = false
		case s == "":
			p.errf(deref(it), `empty selector: expected a metric name such as node_load1, or one with labels such as 'node_cpu_seconds_total{mode="idle"}'`)
			ok = false
		default:
			m.Select = append(m.Select, s)
		}
	}
	return ok
}

// monitorQueries reads name: SQL pairs.
func (p *parser) monitorQueries(m *MonitorSpec, n *yaml.Node) bool {
	list, ok := p.mapping(n, "queries")
	if !ok {
		return false
	}
	if len(list) == 0 {
		p.errf(deref(n), `no queries: expected name: SQL pairs such as {votes: "SELECT count(*) FROM votes"}`)
		return false
	}
	m.Queries = make(map[string]string, len(list))
	for _, e := range list {
		if !monitorQueryNameRE.MatchString(e.key) {
			p.errf(e.k, "bad query name %s: expected lower-case letters, digits and _, starting with a letter (it names the series postgres.query.NAME)", q(e.key))
			ok = false
			continue
		}
		s, tok := p.text(e.v, "query "+q(e.key))
		if !tok {
			ok = false
			continue
		}
		if strings.TrimSpace(s) == "" {
			p.errf(e.v, "query %s is empty: expected SQL that returns one number", q(e.key))
			ok = false
			continue
		}
		m.Queries[e.key] = s
	}
	return ok
}

func monitorKindHint(s string) string {
	if h := Suggest(s, monitorKinds); h != "" {
		return "did you mean " + q(h) + "?"
	}
	return "expected one of " + strings.Join(monitorKinds, ", ")
}

func monitorExample(kind string) string {
	switch kind {
	case monitorkind.Postgres:
		return "postgres://user:${PGPASSWORD}@127.0.0.1:5432/db"
	case monitorkind.Redis:
		return "127.0.0.1:6379"
	case monitorkind.Prometheus:
		return "http://127.0.0.1:9100/metrics"
	case monitorkind.Process:
		return "nginx (a process name) or 1234 (a pid)"
	}
	return ""
}
