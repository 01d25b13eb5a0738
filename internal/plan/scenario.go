package plan

import (
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scenarios and their steps: requests, bodies, captures and checks.

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
	// A key taken for a typo of another (stpes: steps) was the cause:
	// "has no request step" after it would only send the reader looking
	// for a second problem.
	if requests == 0 && failed == 0 && !s.persistent() && len(p.hinted[deref(e.v)]) == 0 {
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
	st.URL = p.requestURL(raw, sc)
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
	if e, ok := f["redirects"]; ok {
		if v, ok := p.redirects(e.v); ok {
			st.Redirects = &v
		}
	}
	p.stepHeaders(st, f, sc)
	if e, ok := f["query"]; ok {
		list, _ := p.mapping(e.v, "query")
		for _, qe := range list {
			if t := p.tmpl(qe.v, "query "+q(qe.key), modeRaw, sc); t != nil {
				st.Query = append(st.Query, Pair{Name: qe.key, Value: t})
			}
		}
	}
	p.requestBody(st, f, sc)
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

// requestURL is the step's URL template: an absolute http(s) URL, or a
// path the target is put in front of. nil when it is refused.
func (p *parser) requestURL(raw *yaml.Node, sc *scope) *Template {
	u, ok := p.text(raw, "URL")
	if !ok {
		return nil
	}
	lu := strings.ToLower(u)
	switch {
	case strings.HasPrefix(u, "/"):
		p.noteRelative(u, raw)
	case (strings.HasPrefix(lu, "http://") || strings.HasPrefix(lu, "https://")) && hasUserinfo(u):
		p.errf(raw, "bad URL: user:password@ in a step URL is not sent; put the credentials in target (sent as Basic authentication to the target only) or set an Authorization header")
		return nil
	case strings.HasPrefix(lu, "http://") || strings.HasPrefix(lu, "https://"):
	default:
		p.errf(raw, "bad URL %s: expected an absolute http(s) URL or a path starting with /", q(u))
		return nil
	}
	if u == "" {
		return nil
	}
	return p.tmpl(raw, "URL", modeURL, sc)
}

// stepHeaders sets the defaults' headers and the step's own. Step headers
// replace defaults of the same name (HTTP header names are
// case-insensitive) in place, so the engine reads one list.
func (p *parser) stepHeaders(st *Step, f map[string]kv, sc *scope) {
	st.Headers = append(st.Headers, p.plan.Defaults.Headers...)
	e, ok := f["headers"]
	if !ok {
		return
	}
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

// requestBody sets the step's body from its one body key, with the
// Content-Type that key implies unless a header gives one.
func (p *parser) requestBody(st *Step, f map[string]kv, sc *scope) {
	body := p.oneOf(f, bodyKeys, "step", "at most one of "+strings.Join(bodyKeys, ", "))
	if body == nil {
		return
	}
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
			if want, ok := p.expectedScalar(v, "expected value"); ok {
				ex.JSON = append(ex.JSON, JSONExpect{Path: path, Value: want})
			}
		}
	}
	return ex
}

// expectedScalar is the text a JSON value must equal: null, booleans and
// numbers as JSON writes them, anything else as the string it is.
func (p *parser) expectedScalar(v *yaml.Node, what string) (string, bool) {
	switch v.ShortTag() {
	case "!!null", "!!bool", "!!int", "!!float":
		if want, ok := p.jsonScalar(v); ok {
			return want, true
		}
		return v.Value, true
	}
	return p.text(v, what)
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
