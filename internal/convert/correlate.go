package convert

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/plan"
)

// Correlation.

// fields lists what a request sends that a server-given value could be in.
func (st *step) fields() []*field {
	var out []*field
	for _, f := range st.segs {
		if f.value != "" {
			out = append(out, f)
		}
	}
	for _, q := range st.query {
		out = append(out, q.f)
	}
	for _, h := range st.headers {
		n := strings.ToLower(h.name)
		if n == "accept" || n == "content-type" {
			continue
		}
		out = append(out, h.f)
	}
	if st.json != nil {
		st.json.leaves(nil, func(_ []string, l *jv) { out = append(out, l.f) })
	}
	for _, ff := range st.form {
		out = append(out, ff.f)
	}
	for _, p := range st.parts {
		if p.path == "" {
			out = append(out, p.f)
		}
	}
	return out
}

// tokenLike says whether a value is specific enough that finding it in a
// response and again in a later request is no coincidence: the shapes
// servers hand out as tokens and ids (UUIDs, JWTs, long runs mixing
// letters and digits, long numbers), never plain words or small numbers,
// which a client sends of its own accord (a page size, a quantity, the
// name of a collection). idKey: the response names the value an id or a
// token, which makes a shorter one count. unique: the value is in one
// response field only, so a long number is not a coincidence either.
func tokenLike(v string, idKey, unique, pathSeg bool) bool {
	if len(v) < 2 || len(v) > 4096 {
		return false
	}
	if uuidRE.MatchString(v) || jwtRE.MatchString(v) {
		return true
	}
	var lower, upper, digit, other bool
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		case c == ' ' || c == '\t':
			// Text with spaces is something a person typed.
			return false
		default:
			other = true
		}
	}
	letter := lower || upper
	switch {
	case digit && !letter && !other:
		return len(v) >= 6 && unique || len(v) >= 3 && idKey
	case digit && letter:
		if dateRE.MatchString(v) {
			return false
		}
		// An id such as "p3" is short, but the response called it one.
		return len(v) >= 8 || idKey
	case !digit && letter && (lower && upper || other) && !pathSeg:
		// Base64 without a digit in it is rare but long; a camelCase
		// word or a slug is short, unless the response calls it a token.
		return len(v) >= 20 && lower && upper || len(v) >= 8 && idKey
	}
	return false
}

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	jwtRE  = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$`)
	dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$`)
)

// idName says whether a field, header or markup name names an id or a
// token.
func idName(name string) bool {
	n := strings.ToLower(name)
	if n == "id" || strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "-id") || strings.HasSuffix(name, "Id") || strings.HasSuffix(name, "ID") {
		return true
	}
	for _, w := range []string{"token", "uuid", "csrf", "xsrf", "session", "nonce", "key"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// respHeaderSkip are response headers no client sends back as a value.
var respHeaderSkip = map[string]bool{
	"date": true, "content-length": true, "content-type": true, "set-cookie": true, "server": true,
	"connection": true, "keep-alive": true, "transfer-encoding": true, "vary": true, "cache-control": true,
	"expires": true, "last-modified": true, "age": true, "content-encoding": true, "accept-ranges": true,
	"x-content-type-options": true, "strict-transport-security": true,
}

// source is where a response handed out a value: a capture expression on
// step i's response.
type source struct {
	step       int
	kind, expr string
	hint       string
	idKey      bool
	lazy       bool // a regex still to build (most values are never asked for)
}

// index maps every value the responses so far handed out to its latest
// source, so each value a request sends is looked up once instead of
// searched for in every earlier response.
type index struct {
	steps []*step
	src   map[string]source
	// fields counts the response fields (JSON leaves, headers, markup
	// values) that held a value, over all responses so far.
	fields map[string]int
	// cookies maps a cookie's value to the response that set it.
	cookies map[string]cookieSource
}

type cookieSource struct {
	step  int
	name  string
	first bool // the response's first Set-Cookie: a header capture gets it
}

func newIndex(steps []*step) *index {
	return &index{steps: steps, src: map[string]source{}, fields: map[string]int{}, cookies: map[string]cookieSource{}}
}

// add indexes step i's response. Within one response a JSON field wins
// over a header and a header over the markup; a later response wins over
// an earlier one, as the client sends the latest value it was given.
func (ix *index) add(i int) {
	x := ix.steps[i].x
	put := func(v string, s source) {
		if len(v) < 2 || len(v) > 4096 {
			return
		}
		if old, ok := ix.src[v]; !ok || old.step != i {
			ix.src[v] = s
		}
	}
	isJSON := false
	if len(x.respBody) > 0 && (isJSONType(x.respCT) || looksJSON(x.respBody)) {
		if root, err := parseJSON(x.respBody); err == nil {
			isJSON = true
			root.leaves(nil, func(p []string, l *jv) {
				ix.fields[l.s]++
				put(l.s, source{step: i, kind: "json", expr: strings.Join(p, "."), hint: jsonHint(p), idKey: idPath(p)})
			})
		}
	}
	first := true
	for _, h := range x.respHeaders {
		n := strings.ToLower(h.name)
		if n == "set-cookie" {
			pair, _, _ := strings.Cut(h.value, ";")
			name, v, ok := strings.Cut(pair, "=")
			if ok && v != "" {
				ix.cookies[strings.TrimSpace(v)] = cookieSource{i, strings.TrimSpace(name), first}
			}
			first = false
			continue
		}
		if respHeaderSkip[n] {
			continue
		}
		v := strings.TrimSpace(h.value)
		ix.fields[v]++
		put(v, source{step: i, kind: "header", expr: h.name, hint: n, idKey: idName(h.name)})
	}
	if len(x.respBody) == 0 || !utf8.Valid(x.respBody) {
		return
	}
	// Values in markup or text: maximal runs of the value class, for a
	// regex built when a request turns out to send one.
	body := x.respBody
	for k := 0; k < len(body); {
		if !inValueClass(body[k]) {
			k++
			continue
		}
		e := k
		for e < len(body) && inValueClass(body[e]) {
			e++
		}
		if e-k >= 4 {
			v := string(body[k:e])
			if !isJSON {
				ix.fields[v]++
			}
			put(v, source{step: i, kind: "regex", lazy: true})
		}
		k = e
	}
}

func inValueClass(c byte) bool {
	switch c {
	case '"', '\'', '<', '>', '&', ';', ',', ' ', '\t', '\n', '\r', '\f', '\v':
		return false
	}
	return true
}

func idPath(p []string) bool {
	for k := len(p) - 1; k >= 0; k-- {
		if _, err := strconv.Atoi(p[k]); err != nil {
			return idName(p[k])
		}
	}
	return false
}

// lookup returns the latest source of v, building its regex if need be.
func (ix *index) lookup(v string) (source, bool) {
	s, ok := ix.src[v]
	if !ok {
		return s, false
	}
	if s.lazy {
		re, hint, ok := regexFor(string(ix.steps[s.step].x.respBody), v)
		if !ok {
			delete(ix.src, v)
			return s, false
		}
		s.lazy, s.expr, s.hint, s.idKey = false, re, hint, idName(hint)
		ix.src[v] = s
	}
	return s, true
}

// valueClass is what a regex capture accepts as the value: what a token,
// an id or a hex digest is made of, and no quote or markup around it.
const valueClass = `[^"'<>\s&;,]`

var valueRE = regexp.MustCompile(`^` + valueClass + `+$`)
var wordRE = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_-]*`)

// regexFor builds a regex that finds v in body by the text just before its
// first occurrence, and checks that it finds exactly v there.
func regexFor(body, v string) (string, string, bool) {
	if len(v) < 4 || !valueRE.MatchString(v) {
		return "", "", false
	}
	return regexForClass(body, v, valueClass+"+")
}

// regexForClass is regexFor with the capture group matching class, a
// pattern narrower than the value class where the value's shape is known.
func regexForClass(body, v, class string) (string, string, bool) {
	i := strings.Index(body, v)
	if i < 0 {
		return "", "", false
	}
	start := max(0, i-64)
	left := body[start:i]
	if nl := strings.LastIndexAny(left, "\n\r"); nl >= 0 {
		left = left[nl+1:]
	}
	// Start at the tag the value is in, or else at a word boundary, so the
	// context does not begin mid-token.
	if k := strings.LastIndexByte(left, '<'); k >= 0 {
		left = left[k:]
	} else if k := strings.IndexAny(left, " \t\"'"); k > 0 && len(left)-k >= 6 {
		left = left[k:]
	}
	left = strings.TrimLeft(left, " \t")
	if len(left) < 4 {
		return "", "", false
	}
	re := regexp.QuoteMeta(left) + "(" + class + ")"
	c, err := regexp.Compile(re)
	if err != nil {
		return "", "", false
	}
	m := c.FindStringSubmatch(body)
	if m == nil || m[1] != v {
		return "", "", false
	}
	hint := ""
	skip := map[string]bool{"value": true, "content": true, "name": true, "input": true, "type": true, "hidden": true, "meta": true, "id": true}
	for _, w := range wordRE.FindAllString(left, -1) {
		if !skip[strings.ToLower(w)] {
			hint = w
		}
	}
	return re, hint, true
}

func jsonHint(p []string) string {
	var words []string
	for _, s := range p {
		if _, err := strconv.Atoi(s); err != nil {
			words = append(words, s)
		}
	}
	if len(words) == 0 {
		return "value"
	}
	last := words[len(words)-1]
	generic := map[string]bool{"id": true, "value": true, "token": true, "key": true, "uuid": true, "code": true}
	if generic[strings.ToLower(last)] && len(words) > 1 {
		return words[len(words)-2] + "_" + last
	}
	return last
}

func ident(hint string) string {
	var b strings.Builder
	for _, r := range hint {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '-' || r == '.' || r == ' ':
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "v_" + s
	}
	return s
}

// correlator names captures: one per (step, expression), each name once.
type correlator struct {
	steps  []*step
	s      *Summary
	ix     *index
	names  map[string]bool
	byExpr map[string]string
	held   map[string]string
}

func (c *correlator) capture(i int, kind, expr, hint string) string {
	key := strconv.Itoa(i) + "\x00" + kind + "\x00" + expr
	if name, ok := c.byExpr[key]; ok {
		return name
	}
	name := ident(hint)
	if plan.ReservedName(name) {
		name += "_1"
	}
	base := name
	for n := 2; c.names[name]; n++ {
		name = base + "_" + strconv.Itoa(n)
	}
	c.names[name] = true
	c.byExpr[key] = name
	st := c.steps[i]
	st.captures = append(st.captures, capture{name, kind, expr})
	c.s.Captures = append(c.s.Captures, fmt.Sprintf("%s: {%s: %s} from %s %s", name, kind, expr, st.x.method, st.x.u.Path))
	return name
}

// find returns the capture that gives v, when an earlier response handed
// it out and it looks like something a server hands out.
func (c *correlator) find(v string, pathSeg bool) (string, bool) {
	if len(v) < 2 || len(v) > 4096 {
		return "", false
	}
	// A value already captured keeps its name: a later response that
	// echoes it (an order read back) hands out nothing new.
	if name, ok := c.held[v]; ok {
		return name, true
	}
	src, ok := c.ix.lookup(v)
	if !ok || !tokenLike(v, src.idKey, c.ix.fields[v] == 1, pathSeg) {
		return "", false
	}
	name := c.capture(src.step, src.kind, src.expr, src.hint)
	c.held[v] = name
	return name, true
}

func correlate(steps []*step, s *Summary) {
	c := &correlator{steps: steps, s: s, ix: newIndex(steps), names: map[string]bool{}, byExpr: map[string]string{}, held: map[string]string{}}
	gen := newClientUUIDs(c, steps)
	for j, st := range steps {
		segs := map[*field]bool{}
		for _, f := range st.segs {
			segs[f] = true
		}
		leaves := map[*field]bool{}
		if st.json != nil {
			st.json.leaves(nil, func(_ []string, l *jv) { leaves[l.f] = true })
		}
		for _, f := range st.fields() {
			if name, ok := c.find(f.value, segs[f]); ok {
				f.tmpl, f.expr = "{{ "+name+" }}", name
				continue
			}
			// A UUID no response handed out was made by the client; a
			// fresh one each iteration is what the client would send
			// (clientvalues.go).
			gen.field(st, f, leaves[f])
		}
		c.cookieHeaders(st)
		// A long value in a raw body is replaced wherever it appears.
		if st.raw != nil {
			c.rawTemplate(st)
			gen.raw(st)
		}
		c.ix.add(j)
	}
	varyingValues(steps, s)
}

// cookieHeaders templates a header that sends back a cookie's value
// (Django's csrftoken cookie as X-CSRFToken, Angular's XSRF-TOKEN as
// X-XSRF-TOKEN): the jar sends the cookie, and the header must carry the
// same value, read from the Set-Cookie that set it.
func (c *correlator) cookieHeaders(st *step) {
	for _, h := range st.headers {
		f := h.f
		if f.tmpl != "" || strings.EqualFold(h.name, "Cookie") {
			continue
		}
		cs, ok := c.ix.cookies[f.value]
		if !ok || !tokenLike(f.value, true, true, false) {
			continue
		}
		from := c.steps[cs.step].x
		if !cs.first || !isToken(cs.name) {
			c.s.Notes = append(c.s.Notes, fmt.Sprintf("%s %s: header %s sends the %s cookie set by %s %s, left as recorded: it is not that response's first Set-Cookie, which is all a header capture reads; capture it by hand",
				st.x.method, st.x.u.Path, h.name, cs.name, from.method, from.u.Path))
			continue
		}
		name := c.capture(cs.step, "header", "Set-Cookie", cs.name+"_cookie")
		// The header holds "name=value; Path=/; ...": the value is what
		// comes before the first ; after name=.
		f.expr = `trimPrefix(split(` + name + `, ";")[0], "` + cs.name + `=")`
		f.tmpl = "{{ " + f.expr + " }}"
	}
}

func (c *correlator) rawTemplate(st *step) {
	text := st.raw.value
	var out strings.Builder
	changed := false
	last := 0
	for _, m := range rawTokenRE.FindAllStringIndex(text, -1) {
		v := text[m[0]:m[1]]
		name, ok := c.find(v, false)
		if !ok {
			continue
		}
		out.WriteString(lit(text[last:m[0]]))
		out.WriteString("{{ " + name + " }}")
		last = m[1]
		changed = true
	}
	if changed {
		out.WriteString(lit(text[last:]))
		st.raw.tmpl = out.String()
	}
}

// rawTokenRE finds tokens in a raw body: runs of the value class of 8 or
// more.
var rawTokenRE = regexp.MustCompile(valueClass + `{8,}`)

// lit makes recorded text safe in a plan: ${ would be read as an
// environment reference when the plan loads.
func lit(s string) string {
	s = strings.ReplaceAll(s, "${", "$${")
	// A template has no escape for a literal "{{": it is written as a
	// reference to a var holding it, which render adds when used.
	return strings.ReplaceAll(s, "{{", lbraceRef)
}

// litKey is lit for text that is not a template (names, keys, comments).
func litKey(s string) string { return strings.ReplaceAll(s, "${", "$${") }

const lbraceRef = "{{ vars.stampede_lbrace }}"

func (f *field) text() string {
	if f.tmpl != "" {
		return lit(f.prefix) + f.tmpl
	}
	return lit(f.prefix + f.value)
}
