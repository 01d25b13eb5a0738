package plan

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

const (
	defaultTimeout     = 30 * time.Second
	defaultGrace       = 5 * time.Second
	defaultMaxInFlight = 10000
	// jsonBudget bounds the nodes a json body may expand to, because YAML
	// aliases can make a small file describe an enormous (or cyclic) value.
	jsonBudget = 100000
	jsonDepth  = 100
	// entryBudget bounds the mapping and list entries read in all, for the
	// same reason: aliases at each level of a plan multiply.
	entryBudget = 1000000
)

var (
	topKeys      = []string{"name", "target", "defaults", "tls", "vars", "data", "tenants", "scenarios", "load", "thresholds"}
	methods      = []string{"get", "post", "put", "patch", "delete", "head"}
	requestKeys  = append(append([]string{}, methods...), "name", "group", "headers", "query", "json", "form", "body", "timeout", "capture", "expect")
	bodyKeys     = []string{"json", "form", "body"}
	reservedHelp = "tenant, vu, iter, uuid, now_ms, rand_int, vars and data"
)

// LoadFile reads and compiles a plan file. Data files and TLS files are
// resolved relative to the plan's directory, so a plan runs the same from
// anywhere. (It is not called Load because that names the load profile.)
func LoadFile(path string) (*Plan, error) {
	return LoadFileWith(path, LoadOptions{})
}

// Parse compiles plan text. file names the plan in error messages and is the
// base for relative data paths. lookupEnv resolves ${NAME}; nil means no
// variable is set. The error, if any, is an *Error.
func Parse(file string, src []byte, lookupEnv func(string) (string, bool)) (*Plan, error) {
	return parse(file, src, lookupEnv, openFile)
}

type parser struct {
	file   string
	dir    string
	src    []byte
	lines  [][]byte
	lookup func(string) (string, bool)
	open   func(string) (io.ReadCloser, error)
	probs  []Problem
	plan   *Plan
	data   map[string]*DataSource
	// tenants is set when the plan has a tenants key at all, valid or not,
	// so a bad count does not also fail every {{ tenant }}.
	tenants bool
	// defaultHeaderData is the data the default headers read, which every
	// scenario then reads too.
	defaultHeaderData map[int]bool
	budget            int
	entries           int
	// hinted records, per mapping, the keys an unknown key was taken for,
	// so "did you mean stages?" is not followed by "stages is missing".
	hinted      map[*yaml.Node]map[string]bool
	relative    []Pos
	relativeURL string
	// secrets are the values read from the environment and the target's
	// password; readingTarget leaves the target's own text out of them
	// (secrets.go).
	secrets       []string
	envRefs       map[string]string // value → ${NAME}, for hideEnv
	readingTarget bool
	targetAuth    string
	// setupAt is where the setup declares each of its captures, to name
	// both places when a later capture takes one's name (declare).
	setupAt map[string]Pos
	// loadOpts says where data files are and which share of them to keep (data.go).
	loadOpts LoadOptions
}

func parse(file string, src []byte, lookup func(string) (string, bool), open func(string) (io.ReadCloser, error)) (*Plan, error) {
	return parseOpts(file, src, lookup, open, LoadOptions{})
}

func parseOpts(file string, src []byte, lookup func(string) (string, bool), open func(string) (io.ReadCloser, error), o LoadOptions) (*Plan, error) {
	p := &parser{
		loadOpts: o,
		file:     file,
		dir:      filepath.Dir(file),
		src:      src,
		open:     open,
		data:     map[string]*DataSource{},
		budget:   jsonBudget,
		entries:  entryBudget,
		plan: &Plan{
			File:   file,
			Source: bytes.Clone(src),
			Vars:   map[string]string{},
		},
	}
	p.lookup = p.recordingLookup(lookup)
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, &Error{Problems: yamlProblems(file, src, err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{Problems: []Problem{{Pos: Pos{File: file, Line: 1, Col: 1}, Msg: "empty plan: expected a mapping with at least scenarios and load"}}}
	}
	p.root(doc.Content[0])
	if len(p.probs) > 0 {
		sortProblems(p.probs)
		return nil, &Error{Problems: p.probs}
	}
	return p.plan, nil
}

func (p *parser) root(n *yaml.Node) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errf(n, "expected a mapping of plan keys (%s), found %s", strings.Join(topKeys, ", "), kindName(n))
		return
	}
	f := p.fields(n, "the plan", allTopKeys())
	pl := p.plan

	pl.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
	if kv, ok := f["name"]; ok {
		if s, ok := p.text(kv.v, "name"); ok {
			pl.Name = s
		}
	}
	if kv, ok := f["target"]; ok {
		p.target(kv)
	}
	if kv, ok := f["vars"]; ok {
		p.vars(kv.v)
	}
	if kv, ok := f["data"]; ok {
		p.dataSources(kv.v)
	}
	if kv, ok := f["tenants"]; ok {
		p.tenantPool(kv.v)
	}
	pl.Defaults.Timeout = defaultTimeout
	if kv, ok := f["defaults"]; ok {
		p.defaults(kv.v)
	}
	if kv, ok := f["tls"]; ok {
		p.tls(kv.v)
	}
	p.setup(f) // workflow.go: before the scenarios, which read its captures
	if kv, ok := f["scenarios"]; ok {
		p.scenarios(kv.v)
	} else if p.missing(n, "scenarios") {
		p.errf(n, `missing key "scenarios": expected a mapping of scenario names to {weight, steps}`)
	}
	if kv, ok := f["load"]; ok {
		p.load(kv.v)
	} else if p.missing(n, "load") {
		p.errf(n, `missing key "load": expected load: {stages: [{duration: 1m, users: 10}]} or the rate form`)
	}
	if kv, ok := f["thresholds"]; ok {
		p.thresholds(kv.v)
	}
	for _, ext := range topExtensions {
		if kv, ok := f[ext.key]; ok {
			ext.parse(p, kv.v)
		}
	}
	p.finishTenants()
	if pl.Target == "" && len(p.relative) > 0 && p.missing(n, "target") {
		p.errAt(p.relative[0], "relative URL %s needs a target: add target: http://host:port (or demo) at the top level", q(p.relativeURL))
	}
	p.finishTarget()
	p.finishSecretHeaders()
	p.finishSecrets()
	p.checkPopulation(f)
	p.checkThresholds()
}

// ---- node helpers ----

type kv struct {
	key  string
	k, v *yaml.Node
}

// oneOf finds which of keys f holds, where at most one may be given. Each
// extra key gets its own error, "WHAT has both A and B: expected EXPECTED",
// and the first one given wins so parsing can go on to report more. Nil
// when none is there; what that means is for the caller to say.
func (p *parser) oneOf(f map[string]kv, keys []string, what, expected string) *kv {
	var first *kv
	for _, k := range keys {
		e, ok := f[k]
		if !ok {
			continue
		}
		if first != nil {
			p.errf(e.k, "%s has both %s and %s: expected %s", what, first.key, k, expected)
			continue
		}
		first = &e
	}
	return first
}

// deref follows aliases so *anchors work everywhere. The hop limit guards
// against alias chains the parser should never produce.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && (n.Value == "" || n.Value == "~" || strings.EqualFold(n.Value, "null"))
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return q(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (p *parser) pos(n *yaml.Node) Pos {
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

func (p *parser) errAt(pos Pos, format string, args ...any) {
	p.probs = append(p.probs, Problem{Pos: pos, Msg: p.hideEnv(sprintf(format, args...))})
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.errAt(p.pos(n), format, args...)
}

// posIn points inside a single-line scalar when the decoded value matches
// the text on its line; for anything else (escapes, folded lines, block
// scalars) it falls back to the scalar's own position.
func (p *parser) posIn(n *yaml.Node, value string, off int) Pos {
	pos := p.pos(n)
	if off <= 0 || off > len(value) || n.Line < 1 {
		return pos
	}
	if p.lines == nil {
		p.lines = bytes.Split(p.src, []byte("\n"))
	}
	if n.Line > len(p.lines) {
		return pos
	}
	line := p.lines[n.Line-1]
	b := 0
	for c := 1; c < n.Column && b < len(line); c++ {
		_, size := utf8.DecodeRune(line[b:])
		b += size
	}
	quote := 0
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		quote = 1
	}
	if b+quote <= len(line) && bytes.HasPrefix(line[b+quote:], []byte(value[:off])) {
		pos.Col += quote + utf8.RuneCountInString(value[:off])
	}
	return pos
}

// spend takes n entries from the entry budget, reporting once when it runs
// out; reading then stops, and the plan fails.
func (p *parser) spend(n *yaml.Node, count int) bool {
	if p.entries < 0 {
		return false
	}
	p.entries -= count
	if p.entries < 0 {
		p.errf(n, "plan too large: aliases expand it to more than %d entries", entryBudget)
		return false
	}
	return true
}

// mapping lists a mapping's entries in file order, rejecting duplicate and
// non-scalar keys. A null value (key with nothing after it) counts as an
// empty mapping.
func (p *parser) mapping(n *yaml.Node, what string) ([]kv, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad %s: expected a mapping, found %s", what, kindName(n))
		return nil, false
	}
	if !p.spend(n, len(n.Content)/2) {
		return nil, false
	}
	var out []kv
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errf(k, "bad key in %s: expected a name, found %s", what, kindName(k))
			continue
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			p.errf(k, "merge keys (<<) are not supported in %s: repeat the keys or use an alias for the whole value", what)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.errf(k, "duplicate key %s in %s (first at line %d)", q(k.Value), what, line)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, kv{key: k.Value, k: k, v: v})
	}
	return out, true
}

// fields is mapping for a fixed set of keys: unknown keys are reported with
// the likely intended key.
func (p *parser) fields(n *yaml.Node, what string, valid []string) map[string]kv {
	list, _ := p.mapping(n, what)
	out := make(map[string]kv, len(list))
	for _, e := range list {
		known := false
		for _, v := range valid {
			if e.key == v {
				known = true
				break
			}
		}
		if !known {
			if s := Suggest(e.key, valid); s != "" {
				if p.hinted == nil {
					p.hinted = map[*yaml.Node]map[string]bool{}
				}
				if p.hinted[deref(n)] == nil {
					p.hinted[deref(n)] = map[string]bool{}
				}
				p.hinted[deref(n)][s] = true
				p.errf(e.k, "unknown key %s in %s: did you mean %s?", q(e.key), what, q(s))
			} else {
				p.errf(e.k, "unknown key %s in %s: expected one of %s", q(e.key), what, strings.Join(valid, ", "))
			}
			continue
		}
		out[e.key] = e
	}
	return out
}

// missing reports whether a required key should be reported as missing:
// not when an unknown key was already taken for it.
func (p *parser) missing(n *yaml.Node, key string) bool {
	return !p.hinted[deref(n)][key]
}

// text is a scalar's value with ${ENV} expanded; ok is false after
// reporting a problem.
func (p *parser) text(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		p.errf(n, "bad %s: expected a single value, found %s", what, kindName(n))
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	s, msg, off := expandEnv(n.Value, p.lookup)
	if msg != "" {
		p.errAt(p.posIn(n, n.Value, off), "%s", msg)
		return "", false
	}
	return s, true
}

func (p *parser) intMin(n *yaml.Node, what string, lo int) (int, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < lo {
		p.errf(n, "bad %s %s: expected a whole number of at least %d", what, q(s), lo)
		return 0, false
	}
	return v, true
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	p.errf(n, "bad %s %s: expected true or false", what, q(s))
	return false, false
}

func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	// A bare number other than 0 has no unit, and guessing one is how
	// a 30-minute test ends up running for 30 seconds.
	return d, err == nil
}

// duration parses a duration that must be above zero, or zero or above.
func (p *parser) duration(n *yaml.Node, what string, zeroOK bool) (time.Duration, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return 0, false
	}
	d, ok := parseDuration(s)
	if !ok {
		p.errf(n, "bad duration %s: expected a number with a unit such as 500ms, 30s, 2m", q(s))
		return 0, false
	}
	switch {
	case d < 0:
		p.errf(n, "bad %s %s: expected a duration of zero or more", what, q(s))
		return 0, false
	case d == 0 && !zeroOK:
		p.errf(n, "bad %s %s: expected a duration above zero", what, q(s))
		return 0, false
	}
	return d, true
}

func (p *parser) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "bad %s: expected a list, found %s", what, kindName(n))
		return nil, false
	}
	if !p.spend(n, len(n.Content)) {
		return nil, false
	}
	return n.Content, true
}

// ---- top level sections ----

func (p *parser) target(e kv) {
	p.readingTarget = true
	s, ok := p.text(e.v, "target")
	p.readingTarget = false
	if !ok {
		return
	}
	p.plan.TargetPos = p.pos(deref(e.v))
	if s == "demo" {
		p.plan.Target = s
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		p.errf(e.v, "bad target %s: expected an http:// or https:// URL such as http://127.0.0.1:8080, or demo", q(hideUserinfo(s)))
		return
	}
	p.targetCredentials(u)
	// Without the trailing slash the engine can join Target and a step path
	// by concatenation.
	p.plan.Target = strings.TrimRight(u.String(), "/")
}

func (p *parser) vars(n *yaml.Node) {
	list, _ := p.mapping(n, "vars")
	for _, e := range list {
		if !isIdent(e.key) {
			p.errf(e.k, "bad var name %s: expected letters, digits, _ and -, not starting with a digit", q(e.key))
			continue
		}
		v := deref(e.v)
		if v.Kind != yaml.ScalarNode {
			p.errf(v, "bad var %s: expected a single value (text, number or bool), found %s", q(e.key), kindName(v))
			continue
		}
		if s, ok := p.text(v, "var "+q(e.key)); ok {
			p.plan.Vars[e.key] = s
		}
	}
}

func (p *parser) dataSources(n *yaml.Node) {
	list, _ := p.mapping(n, "data")
	for _, e := range list {
		what := "data source " + q(e.key)
		if !isIdent(e.key) {
			p.errf(e.k, "bad data source name %s: expected letters, digits, _ and -, not starting with a digit", q(e.key))
			continue
		}
		ds := &DataSource{Name: e.key, Index: len(p.plan.Data), Pos: p.pos(e.k)}
		p.plan.Data = append(p.plan.Data, ds)
		p.data[e.key] = ds
		f := p.fields(e.v, what, []string{"file", "pick", "by_tenant"})
		if bt, ok := f["by_tenant"]; ok {
			p.byTenantKey(ds, bt.v)
		}
		if pk, ok := f["pick"]; ok {
			if s, ok := p.text(pk.v, "pick"); ok {
				switch s {
				case "sequential":
					ds.Pick = PickSequential
				case "unique":
					ds.Pick = PickUnique
				case "random":
					ds.Pick = PickRandom
				default:
					msg := "bad pick " + q(s) + ": expected sequential, unique or random"
					if h := Suggest(s, []string{"sequential", "unique", "random"}); h != "" {
						msg += " (did you mean " + q(h) + "?)"
					}
					p.errf(pk.v, "%s", msg)
				}
			}
		}
		fk, ok := f["file"]
		if !ok {
			if deref(e.v).Kind == yaml.MappingNode && p.missing(e.v, "file") {
				p.errf(e.k, "%s has no file: expected {file: NAME.csv, pick: sequential|unique|random}", what)
			}
			continue
		}
		name, ok := p.text(fk.v, "file")
		if !ok {
			continue
		}
		if name == "" {
			p.errf(fk.v, "bad file for %s: expected the path of a .csv or .csv.gz file", what)
			continue
		}
		ds.File = p.dataPath(name)
		if !p.confined(fk.v, name, ds.File) {
			continue
		}
		if msg := p.loadData(ds); msg != "" {
			p.errf(fk.k, "%s", msg)
			continue
		}
	}
}

func (p *parser) resolve(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(p.dir, name)
}

func (p *parser) tenantPool(n *yaml.Node) {
	p.tenants = true
	f := p.fields(n, "tenants", []string{"count", "waves"})
	if w, ok := f["waves"]; ok {
		p.waves(w.v)
	}
	c, ok := f["count"]
	if !ok && p.missing(n, "count") {
		p.errf(deref(n), "tenants has no count: expected tenants: {count: N}")
	}
	if !ok {
		return
	}
	if v, ok := p.intMin(c.v, "tenant count", 1); ok {
		p.plan.Tenants = v
	}
}

func (p *parser) defaults(n *yaml.Node) {
	f := p.fields(n, "defaults", []string{"headers", "timeout"})
	if e, ok := f["timeout"]; ok {
		if d, ok := p.duration(e.v, "timeout", false); ok {
			p.plan.Defaults.Timeout = d
		}
	}
	if e, ok := f["headers"]; ok {
		p.defaultHeaderData = map[int]bool{}
		sc := p.scope(nil)
		sc.dataUsed = p.defaultHeaderData
		p.plan.Defaults.Headers = p.headers(e.v, sc)
	}
}

func (p *parser) tls(n *yaml.Node) {
	f := p.fields(n, "tls", []string{"ca_file", "cert_file", "key_file", "insecure", "server_name"})
	t := &p.plan.TLS
	file := func(key string, dst *string) {
		if e, ok := f[key]; ok {
			if s, ok := p.text(e.v, key); ok && s != "" {
				*dst = p.resolve(s)
			}
		}
	}
	file("ca_file", &t.CAFile)
	file("cert_file", &t.CertFile)
	file("key_file", &t.KeyFile)
	if e, ok := f["insecure"]; ok {
		t.Insecure, _ = p.boolean(e.v, "insecure")
	}
	if e, ok := f["server_name"]; ok {
		t.ServerName, _ = p.text(e.v, "server_name")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		p.errf(deref(n), "tls needs both cert_file and key_file for a client certificate, found only one")
	}
}

func (p *parser) thresholds(n *yaml.Node) {
	items, _ := p.list(n, "thresholds")
	for _, it := range items {
		if s, ok := p.text(it, "threshold"); ok {
			p.plan.Thresholds = append(p.plan.Thresholds, Located{Value: s, Pos: p.pos(deref(it))})
		}
	}
}

func (p *parser) scope(captures map[string]int) *scope {
	return &scope{vars: p.plan.Vars, data: p.data, tenants: p.tenants, captures: captures, dataUsed: map[int]bool{}}
}

// tmpl compiles a scalar into a template. Its Source is the text after
// ${ENV} expansion, so that Source and Parts agree (the engine reads Source
// to tell relative URLs from absolute ones).
func (p *parser) tmpl(n *yaml.Node, what string, m tmplMode, sc *scope) *Template {
	var b builder
	s, ok := p.tmplInto(&b, n, what, m, sc)
	if !ok {
		return nil
	}
	return b.template(s)
}

// tmplInto compiles a scalar onto b and returns its expanded text.
func (p *parser) tmplInto(b *builder, n *yaml.Node, what string, m tmplMode, sc *scope) (string, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return "", false
	}
	if msg, off := compileInto(b, s, m, sc); msg != "" {
		p.errAt(p.posIn(deref(n), s, off), "%s", msg)
		return "", false
	}
	return s, true
}

// headers compiles a header mapping; names are checked here because a bad
// one would otherwise only fail at run time, on every request.
func (p *parser) headers(n *yaml.Node, sc *scope) []Header {
	list, _ := p.mapping(n, "headers")
	var out []Header
	for _, e := range list {
		if !isToken(e.key) {
			p.errf(e.k, "bad header name %s: expected letters, digits and !#$%%&'*+-.^_`|~", q(e.key))
			continue
		}
		if t := p.tmpl(e.v, "header "+q(e.key), modeRaw, sc); t != nil {
			out = append(out, Header{Name: e.key, Value: t})
		}
	}
	return out
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// ---- scenarios ----

func (p *parser) scenarios(n *yaml.Node) {
	list, ok := p.mapping(n, "scenarios")
	if ok && len(list) == 0 {
		p.errf(deref(n), "no scenarios: expected at least one, such as scenarios: {user: {steps: [{get: /}]}}")
	}
	for _, e := range list {
		if s := p.scenario(e); s != nil {
			p.plan.Scenarios = append(p.plan.Scenarios, s)
		}
	}
}

func (p *parser) scenario(e kv) *Scenario {
	what := "scenario " + q(e.key)
	s := &Scenario{Name: e.key, Weight: 1, Pos: p.pos(e.k)}
	if e.key == "" {
		p.errf(e.k, "bad scenario name: expected a non-empty name")
	}
	f := p.fields(e.v, what, allScenarioKeys())
	if w, ok := f["weight"]; ok {
		if v, ok := p.intMin(w.v, "weight", 1); ok {
			s.Weight = v
		}
	}
	sc := p.scope(map[string]int{})
	for i := range p.defaultHeaderData {
		sc.dataUsed[i] = true
	}
	for _, ext := range scenarioExtensions {
		if kv, ok := f[ext.key]; ok {
			ext.parse(p, s, kv.v)
		}
	}
	var items []*yaml.Node
	if st, ok := f["steps"]; ok {
		items, _ = p.list(st.v, "steps of "+what)
	}
	requests, failed := p.scenarioFlow(s, f, items, sc) // workflow.go
	linkScripts(s.Steps)                                // script.go
	if requests == 0 && failed == 0 && !s.persistent() {
		p.errf(e.k, "%s has no request step: expected steps with at least one of %s", what, strings.Join(methods, ", "))
	}
	if s.persistent() {
		p.finishConnection(s, f) // connection.go
	}
	s.Captures = len(sc.capOrder)
	s.CaptureNames = sc.capOrder
	for i := range sc.dataUsed {
		s.DataUsed = append(s.DataUsed, i)
	}
	sort.Ints(s.DataUsed)
	return s
}

func (p *parser) step(n *yaml.Node, sc *scope) *Step {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad step: expected a mapping with one of %s (or think), found %s", strings.Join(methods, ", "), kindName(n))
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == "think" {
			return p.think(n)
		}
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == "script" {
			return p.scriptStep(n, sc) // script.go
		}
	}
	return p.request(n, sc)
}

func (p *parser) think(n *yaml.Node) *Step {
	f := p.fields(n, "think step", []string{"think"})
	st := &Step{Kind: StepThink, Pos: p.pos(n)}
	e := f["think"]
	if deref(e.v).Kind == yaml.MappingNode {
		return p.thinkDist(st, deref(e.v)) // think.go
	}
	s, ok := p.text(e.v, "think")
	if !ok {
		return nil
	}
	a, b, ranged := strings.Cut(s, "..")
	lo, ok1 := parseDuration(a)
	hi, ok2 := lo, true
	if ranged {
		hi, ok2 = parseDuration(b)
	}
	switch {
	case !ok1 || !ok2:
		p.errf(e.v, "bad think %s: expected a duration such as 1s, or a range such as 1s..3s", q(s))
		return nil
	case lo < 0:
		p.errf(e.v, "bad think %s: expected durations of zero or more", q(s))
		return nil
	case lo > hi:
		p.errf(e.v, "bad think %s: the minimum is above the maximum", q(s))
		return nil
	}
	st.ThinkMin, st.ThinkMax = lo, hi
	return st
}

func (p *parser) request(n *yaml.Node, sc *scope) *Step {
	f := p.fields(n, "step", requestKeys)
	st := &Step{Kind: StepRequest, Pos: p.pos(n), Timeout: p.plan.Defaults.Timeout}
	method := p.oneOf(f, methods, "step", "exactly one method")
	if method == nil {
		p.errf(n, "step has no request: expected one of %s (or think)", strings.Join(methods, ", "))
		return nil
	}
	st.Method = strings.ToUpper(method.key)
	raw := deref(method.v)
	// The default name is the URL as written, ${ENV} unexpanded: it is a
	// metric key that ends up in results and reports.
	st.Name = st.Method + " " + raw.Value
	if u, ok := p.text(raw, "URL"); ok {
		lu := strings.ToLower(u)
		switch {
		case strings.HasPrefix(u, "/"):
			if p.relative == nil {
				p.relativeURL = u
			}
			p.relative = append(p.relative, p.pos(raw))
		case (strings.HasPrefix(lu, "http://") || strings.HasPrefix(lu, "https://")) && hasUserinfo(u):
			p.errf(raw, "bad URL: user:password@ in a step URL is not sent; put the credentials in target (sent as Basic authentication to the target only) or set an Authorization header")
			u = ""
		case strings.HasPrefix(lu, "http://") || strings.HasPrefix(lu, "https://"):
		default:
			p.errf(raw, "bad URL %s: expected an absolute http(s) URL or a path starting with /", q(u))
			u = ""
		}
		if u != "" {
			st.URL = p.tmpl(raw, "URL", modeURL, sc)
		}
	}
	if e, ok := f["name"]; ok {
		if s, ok := p.text(e.v, "name"); ok && s != "" {
			st.Name = s
		}
	}
	if e, ok := f["group"]; ok {
		st.Group, _ = p.text(e.v, "group")
	}
	if e, ok := f["timeout"]; ok {
		if d, ok := p.duration(e.v, "timeout", false); ok {
			st.Timeout = d
		}
	}

	// Step headers replace defaults of the same name (HTTP header names are
	// case-insensitive) in place, so the engine reads one list.
	st.Headers = append(st.Headers, p.plan.Defaults.Headers...)
	if e, ok := f["headers"]; ok {
		for _, h := range p.headers(e.v, sc) {
			replaced := false
			for i := range st.Headers {
				if strings.EqualFold(st.Headers[i].Name, h.Name) {
					st.Headers[i], replaced = h, true
					break
				}
			}
			if !replaced {
				st.Headers = append(st.Headers, h)
			}
		}
	}

	if e, ok := f["query"]; ok {
		list, _ := p.mapping(e.v, "query")
		for _, qe := range list {
			if t := p.tmpl(qe.v, "query "+q(qe.key), modeRaw, sc); t != nil {
				st.Query = append(st.Query, Pair{Name: qe.key, Value: t})
			}
		}
	}

	body := p.oneOf(f, bodyKeys, "step", "at most one of "+strings.Join(bodyKeys, ", "))
	if body != nil {
		switch body.key {
		case "json":
			st.Body = p.jsonBody(body.v, sc)
			st.ContentType = "application/json"
		case "form":
			st.Body = p.formBody(body.v, sc)
			st.ContentType = "application/x-www-form-urlencoded"
		case "body":
			st.Body = p.tmpl(body.v, "body", modeRaw, sc)
		default:
			p.extraBody(st, body, sc) // body.go
		}
		for _, h := range st.Headers {
			if strings.EqualFold(h.Name, "Content-Type") {
				st.ContentType = ""
			}
		}
	}

	p.finishBody(st, f) // body.go: gzip, and bodies finished at load

	if e, ok := f["expect"]; ok {
		st.Expect = p.expect(e.v)
	}
	// Captures come last: a step cannot use what it captures itself.
	if e, ok := f["capture"]; ok {
		st.Captures = p.captures(e.v, sc)
	}
	return st
}

// jsonBody renders a YAML value as compact JSON once, at load time; only the
// string scalars that hold references stay dynamic.
func (p *parser) jsonBody(n *yaml.Node, sc *scope) *Template {
	var b builder
	var src strings.Builder
	if !p.jsonValue(&b, &src, n, sc, 0) {
		return nil
	}
	return b.template(src.String())
}

func (p *parser) jsonValue(b *builder, src *strings.Builder, n *yaml.Node, sc *scope, depth int) bool {
	n = deref(n)
	p.budget--
	if p.budget < 0 || depth > jsonDepth {
		if p.budget == -1 || depth == jsonDepth+1 {
			p.errf(n, "json body too large or too deeply nested: expected at most %d values, %d levels deep", jsonBudget, jsonDepth)
		}
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		list, _ := p.mapping(n, "json object")
		b.lit("{")
		src.WriteByte('{')
		ok := true
		for i, e := range list {
			if i > 0 {
				b.lit(",")
				src.WriteByte(',')
			}
			k := `"` + escapeLiteral(e.key, modeJSON) + `":`
			b.lit(k)
			src.WriteString(k)
			ok = p.jsonValue(b, src, e.v, sc, depth+1) && ok
		}
		b.lit("}")
		src.WriteByte('}')
		return ok
	case yaml.SequenceNode:
		b.lit("[")
		src.WriteByte('[')
		ok := true
		for i, it := range n.Content {
			if i > 0 {
				b.lit(",")
				src.WriteByte(',')
			}
			ok = p.jsonValue(b, src, it, sc, depth+1) && ok
		}
		b.lit("]")
		src.WriteByte(']')
		return ok
	case yaml.ScalarNode:
		if lit, ok := p.jsonScalar(n); ok {
			b.lit(lit)
			src.WriteString(lit)
			return true
		}
		b.lit(`"`)
		text, ok := p.tmplInto(b, n, "json value", modeJSON, sc)
		b.lit(`"`)
		src.WriteString(`"` + escapeLiteral(text, modeJSON) + `"`)
		return ok
	}
	p.errf(n, "bad json value: expected a mapping, list or scalar, found %s", kindName(n))
	return false
}

// jsonScalar returns the JSON text of a non-string scalar. Numbers keep
// their written form when it is valid JSON (1.50 stays 1.50) and are
// normalised otherwise (YAML's 0x1F or 1_000).
func (p *parser) jsonScalar(n *yaml.Node) (string, bool) {
	switch n.ShortTag() {
	case "!!null":
		return "null", true
	case "!!bool":
		var v bool
		if n.Decode(&v) == nil {
			return strconv.FormatBool(v), true
		}
	case "!!int":
		if isJSONNumber(n.Value) {
			return n.Value, true
		}
		var v int64
		if n.Decode(&v) == nil {
			return strconv.FormatInt(v, 10), true
		}
	case "!!float":
		if isJSONNumber(n.Value) {
			return n.Value, true
		}
		var v float64
		if n.Decode(&v) == nil && v-v == 0 {
			return strconv.FormatFloat(v, 'g', -1, 64), true
		}
	}
	return "", false
}

// isJSONNumber follows the number grammar of RFC 8259.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

func (p *parser) formBody(n *yaml.Node, sc *scope) *Template {
	list, ok := p.mapping(n, "form")
	if !ok {
		return nil
	}
	var b builder
	var src strings.Builder
	good := true
	for i, e := range list {
		if i > 0 {
			b.lit("&")
			src.WriteByte('&')
		}
		k := string(appendURLEscaped(nil, e.key, true)) + "="
		b.lit(k)
		text, ok := p.tmplInto(&b, e.v, "form value "+q(e.key), modeQuery, sc)
		src.WriteString(k + text)
		good = good && ok
	}
	if !good {
		return nil
	}
	return b.template(src.String())
}

func (p *parser) captures(n *yaml.Node, sc *scope) []Capture {
	list, _ := p.mapping(n, "capture")
	var out []Capture
	for _, e := range list {
		what := "capture " + q(e.key)
		if !isIdent(e.key) {
			p.errf(e.k, "bad capture name %s: expected letters, digits, _ and -, not starting with a digit", q(e.key))
			continue
		}
		if reserved[e.key] {
			p.errf(e.k, "bad capture name %s: %s are reserved in templates", q(e.key), reservedHelp)
			continue
		}
		c := Capture{Name: e.key, Pos: p.pos(e.k)}
		f := p.fields(e.v, what, []string{"json", "regex", "header", "secret"})
		if sk, ok := f["secret"]; ok {
			c.Secret, _ = p.boolean(sk.v, "secret")
			delete(f, "secret")
		}
		src := p.oneOf(f, []string{"json", "regex", "header"}, what, "exactly one of json, regex, header")
		if src == nil {
			if deref(e.v).Kind == yaml.MappingNode || isNull(deref(e.v)) {
				p.errf(e.k, "%s says nothing to capture: expected {json: a.b.0.c}, {regex: \"id=(\\d+)\"} or {header: Location}", what)
			}
			continue
		}
		s, ok := p.text(src.v, what)
		if !ok {
			continue
		}
		switch src.key {
		case "json":
			path, ok := jsonPath(s)
			if !ok {
				p.errf(src.v, "bad json path %s: expected dotted names and indexes such as parties.0.id", q(s))
				continue
			}
			c.Kind, c.JSONPath = CaptureJSON, path
		case "regex":
			re, err := compileRegex(s)
			if err != "" {
				p.errf(src.v, "bad regex %s: %s", q(s), err)
				continue
			}
			c.Kind, c.Regex = CaptureRegex, re
		case "header":
			if !isToken(s) {
				p.errf(src.v, "bad header name %s: expected letters, digits and !#$%%&'*+-.^_`|~", q(s))
				continue
			}
			c.Kind, c.Header = CaptureHeader, s
		}
		// A name captured again (a refreshed token, say) reuses its slot:
		// later steps mean the latest value.
		c.Slot = p.declare(sc, e.key, e.k) // workflow.go
		out = append(out, c)
	}
	return out
}

func jsonPath(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	parts := strings.Split(s, ".")
	for _, x := range parts {
		if x == "" {
			return nil, false
		}
	}
	return parts, true
}

func (p *parser) expect(n *yaml.Node) Expect {
	var ex Expect
	f := p.fields(n, "expect", []string{"status", "body_contains", "json"})
	if e, ok := f["status"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, it := range items {
			s, ok := p.text(it, "status")
			if !ok {
				continue
			}
			if m, ok := parseStatus(s); ok {
				ex.Status = append(ex.Status, m)
			} else {
				p.errf(it, "bad status %s: expected a code such as 200, a class such as 2xx, or a list of them", q(s))
			}
		}
	}
	if e, ok := f["body_contains"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, it := range items {
			if s, ok := p.text(it, "body_contains"); ok {
				if s == "" {
					p.errf(it, "bad body_contains: expected non-empty text")
					continue
				}
				ex.BodyContains = append(ex.BodyContains, s)
			}
		}
	}
	if e, ok := f["json"]; ok {
		list, _ := p.mapping(e.v, "expect json")
		for _, je := range list {
			path, ok := jsonPath(je.key)
			if !ok {
				p.errf(je.k, "bad json path %s: expected dotted names and indexes such as parties.0.id", q(je.key))
				continue
			}
			v := deref(je.v)
			if v.Kind != yaml.ScalarNode {
				p.errf(v, "bad expected value for %s: expected a single value, found %s", q(je.key), kindName(v))
				continue
			}
			want, ok := "", true
			switch v.ShortTag() {
			case "!!null", "!!bool", "!!int", "!!float":
				want, ok = p.jsonScalar(v)
				if !ok {
					want, ok = v.Value, true
				}
			default:
				want, ok = p.text(v, "expected value")
			}
			if ok {
				ex.JSON = append(ex.JSON, JSONExpect{Path: path, Value: want})
			}
		}
	}
	return ex
}

func parseStatus(s string) (StatusMatch, bool) {
	s = strings.TrimSpace(s)
	if len(s) == 3 && (s[1] == 'x' || s[1] == 'X') && (s[2] == 'x' || s[2] == 'X') && '1' <= s[0] && s[0] <= '5' {
		return StatusMatch{Class: int(s[0] - '0')}, true
	}
	code, err := strconv.Atoi(s)
	if err != nil || code < 100 || code > 599 {
		return StatusMatch{}, false
	}
	return StatusMatch{Code: code}, true
}

// ---- load ----

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
	st := Stage{Pos: p.pos(n)}
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

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

func compileRegex(s string) (*regexp.Regexp, string) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, strings.TrimPrefix(err.Error(), "error parsing regexp: ")
	}
	return re, ""
}
