package plan

import (
	"net/url"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// The plan's top-level sections other than scenarios and load.

func (p *parser) target(e kv) {
	p.readingTarget = true
	s, ok := p.targetText(e.v)
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
	p.tlsFiles(f, t) // tlsfiles.go
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
