package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Options shape a conversion.
type Options struct {
	// Source names the recording in the plan's header comment.
	Source string
	// Name is the plan's and its scenario's name (default "recording").
	Name string
	// Host is the host[:port] whose requests make the plan; the others are
	// third-party and left out unless KeepThirdParty. Default: the host of
	// the first request that is not a static asset.
	Host           string
	KeepStatic     bool
	KeepThirdParty bool
	// NoCorrelate keeps every value as recorded.
	NoCorrelate bool
	// MinThink: recorded gaps shorter than this are not kept as think steps
	// (default 100ms; a browser's own scheduling makes gaps of a few ms).
	MinThink time.Duration
	// Users and Duration make the plan's single load stage (default 1 user
	// for 1m).
	Users    int
	Duration time.Duration
}

// Summary says what a conversion kept and left out, for the user.
type Summary struct {
	Total, Kept        int
	Static, ThirdParty int
	Other              int // not sendable by a plan: OPTIONS preflights, failed requests, WebSocket upgrades
	Captures           []string
	Generated          []string // client-made UUIDs replaced by {{ uuid }}
	Notes              []string
	MainHost           string
	ThirdPartyHosts    []string
	thirdPartySeen     map[string]bool
}

// HAR converts a HAR file's contents to a plan.
func HAR(data []byte, o Options) ([]byte, Summary, error) {
	xs, err := parseHAR(data)
	if err != nil {
		return nil, Summary{}, err
	}
	return build(xs, o)
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "recording"
	}
	if o.MinThink == 0 {
		o.MinThink = 100 * time.Millisecond
	}
	if o.Users <= 0 {
		o.Users = 1
	}
	if o.Duration <= 0 {
		o.Duration = time.Minute
	}
}

var staticExt = map[string]bool{
	".js": true, ".mjs": true, ".css": true, ".map": true, ".png": true, ".jpg": true, ".jpeg": true,
	".gif": true, ".svg": true, ".ico": true, ".webp": true, ".avif": true, ".bmp": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
	".mp4": true, ".webm": true, ".mp3": true, ".ogg": true, ".wav": true,
}

var staticResource = map[string]bool{
	"stylesheet": true, "script": true, "image": true, "font": true, "media": true,
	"manifest": true, "texttrack": true,
}

// isStatic tells assets a browser fetches to draw a page from the requests
// the application makes: the kind the recorder saw first, then the file
// extension, then what the server said it sent.
func isStatic(x *exchange) bool {
	if x.method != "GET" && x.method != "HEAD" {
		return false
	}
	if staticResource[x.resource] {
		return true
	}
	if staticExt[strings.ToLower(path.Ext(x.u.Path))] {
		return true
	}
	mt := mediaType(x.respCT)
	return strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "font/") || strings.HasPrefix(mt, "video/") ||
		strings.HasPrefix(mt, "audio/") || mt == "text/css" || strings.Contains(mt, "javascript")
}

var sendable = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true}

func build(xs []*exchange, o Options) ([]byte, Summary, error) {
	o.defaults()
	s := Summary{Total: len(xs), thirdPartySeen: map[string]bool{}}
	main := o.Host
	if main == "" {
		for _, x := range xs {
			if !isStatic(x) && sendable[x.method] {
				main = x.u.Host
				break
			}
		}
		if main == "" {
			main = xs[0].u.Host
		}
	}
	s.MainHost = main
	var scheme string
	var kept []*exchange
	for _, x := range xs {
		switch {
		case !sendable[x.method] || x.status == 0 && x.resource != "" || x.status == 101:
			// A status of 0 is a request the browser never got an answer
			// to (blocked, cancelled); a plan cannot send OPTIONS, and a
			// CORS preflight is the browser's business anyway.
			s.Other++
			continue
		case x.u.Host != main && !o.KeepThirdParty:
			s.ThirdParty++
			if !s.thirdPartySeen[x.u.Host] {
				s.thirdPartySeen[x.u.Host] = true
				s.ThirdPartyHosts = append(s.ThirdPartyHosts, x.u.Host)
			}
			continue
		case isStatic(x) && !o.KeepStatic:
			s.Static++
			continue
		}
		if scheme == "" && x.u.Host == main {
			scheme = x.u.Scheme
		}
		kept = append(kept, x)
	}
	if len(kept) == 0 {
		return nil, s, fmt.Errorf("nothing to convert: all %d requests were static assets (%d), third-party (%d) or not sendable (%d); --keep-static or --keep-third-party keep them", s.Total, s.Static, s.ThirdParty, s.Other)
	}
	if scheme == "" {
		scheme = kept[0].u.Scheme
	}
	s.Kept = len(kept)
	target := scheme + "://" + main

	steps := make([]*step, len(kept))
	for i, x := range kept {
		steps[i] = newStep(x, main, &s)
	}
	if !o.NoCorrelate {
		correlate(steps, &s)
	}
	out, err := render(steps, target, o, &s)
	return out, s, err
}

// ---------------------------------------------------------------------------
// Steps: a request taken apart into the fields a value can be sent in.

type field struct {
	value string // decoded, as the server sees it
	tmpl  string // set once the value became a template
	// part: the value is a token after a scheme ("Bearer abc"); prefix is
	// what stays literal.
	prefix string
}

type capture struct {
	name string
	kind string // json, header, regex
	expr string
}

type step struct {
	x        *exchange
	absolute bool     // not the main host: the URL is written in full
	segs     []*field // path segments
	rawSegs  []string // as recorded (escaped)
	query    []*qpart
	headers  []hdr
	json     *jv
	form     []*formField
	raw      *field // a body that is neither JSON nor a form
	captures []capture
	// The response's JSON, parsed once when first searched.
	respJSON *jv
	parsed   bool
}

type qpart struct {
	rawName string
	hasEq   bool
	f       *field
	rawVal  string
}

type hdr struct {
	name string
	f    *field
}

type formField struct {
	name string
	f    *field
}

// Headers a plan gets no value from sending as recorded: the client sets
// them itself (Host, Content-Length, Connection, Accept-Encoding), the jar
// sends cookies, or they describe the browser rather than the application.
var dropHeaders = map[string]bool{
	"host": true, "connection": true, "content-length": true, "cookie": true, "accept-encoding": true,
	"user-agent": true, "accept-language": true, "referer": true, "origin": true, "cache-control": true,
	"pragma": true, "upgrade-insecure-requests": true, "dnt": true, "priority": true, "te": true,
	"keep-alive": true, "if-none-match": true, "if-modified-since": true, "purpose": true,
	"x-client-data": true, "transfer-encoding": true, "upgrade": true, "proxy-connection": true,
}

func keepHeader(name, value string) bool {
	n := strings.ToLower(name)
	if dropHeaders[n] || strings.HasPrefix(n, "sec-") || strings.HasPrefix(n, ":") || strings.HasPrefix(n, "proxy-") {
		return false
	}
	if n == "accept" {
		// A browser's defaults for pages and fetches say nothing about the
		// application.
		v := strings.TrimSpace(value)
		return v != "*/*" && !strings.Contains(v, "text/html")
	}
	return true
}

func newStep(x *exchange, main string, s *Summary) *step {
	st := &step{x: x, absolute: x.u.Host != main}
	p := x.u.EscapedPath()
	if p == "" {
		p = "/"
	}
	st.rawSegs = strings.Split(p, "/")
	for _, rs := range st.rawSegs {
		v, err := url.PathUnescape(rs)
		if err != nil {
			v = rs
		}
		st.segs = append(st.segs, &field{value: v})
	}
	if x.u.RawQuery != "" {
		for _, part := range strings.Split(x.u.RawQuery, "&") {
			n, v, eq := strings.Cut(part, "=")
			dv, err := url.QueryUnescape(v)
			if err != nil {
				dv = v
			}
			st.query = append(st.query, &qpart{rawName: n, hasEq: eq, f: &field{value: dv}, rawVal: v})
		}
	}
	if x.isForm && dupNames(x.form) {
		// a=1&a=2 is a list to the server, and a plan's form: names each
		// field once: the body goes out as recorded.
		var b strings.Builder
		for i, e := range x.form {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(e.name) + "=" + url.QueryEscape(e.value))
		}
		x.isForm, x.body = false, []byte(b.String())
		if x.bodyCT == "" {
			x.bodyCT = "application/x-www-form-urlencoded"
		}
	}
	for _, h := range x.headers {
		if !keepHeader(h.name, h.value) && !(x.fromCurl && strings.EqualFold(h.name, "Cookie")) {
			continue
		}
		if !isToken(h.name) || strings.ContainsAny(h.value, "\r\n\x00") {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: header %q left out: not a valid HTTP header", x.method, x.u.Redacted(), h.name))
			continue
		}
		if strings.EqualFold(h.name, "Content-Type") && (x.isForm || len(x.body) == 0) {
			continue
		}
		// A header sent twice is one list to the server; a plan names
		// each header once.
		merged := false
		for _, prev := range st.headers {
			if strings.EqualFold(prev.name, h.name) {
				sep := ", "
				if strings.EqualFold(h.name, "Cookie") {
					sep = "; "
				}
				prev.f.value = prev.f.prefix + prev.f.value + sep + h.value
				prev.f.prefix = ""
				merged = true
				break
			}
		}
		if merged {
			continue
		}
		f := &field{value: h.value}
		if scheme, tok, ok := strings.Cut(h.value, " "); ok && strings.EqualFold(h.name, "Authorization") && !strings.EqualFold(scheme, "Basic") {
			f.prefix, f.value = scheme+" ", tok
		}
		st.headers = append(st.headers, hdr{h.name, f})
	}
	switch {
	case x.isForm:
		for _, e := range x.form {
			st.form = append(st.form, &formField{e.name, &field{value: e.value}})
		}
	case len(x.body) > 0:
		if isJSONType(x.bodyCT) || looksJSON(x.body) {
			if v, err := parseJSON(x.body); err == nil {
				st.json = v
				// The plan's json: sets this one itself.
				if mediaType(x.bodyCT) == "application/json" {
					st.dropHeader("Content-Type")
				} else if header(x.headers, "Content-Type") == "" && x.bodyCT != "" {
					st.headers = append(st.headers, hdr{"Content-Type", &field{value: x.bodyCT}})
				}
				break
			}
		}
		if !utf8.Valid(x.body) {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: the body is binary (%d bytes) and was left out; a plan body is text", x.method, x.u.Redacted(), len(x.body)))
			st.dropHeader("Content-Type")
			break
		}
		st.raw = &field{value: string(x.body)}
		if !st.hasHeader("Content-Type") && x.bodyCT != "" {
			st.headers = append(st.headers, hdr{"Content-Type", &field{value: x.bodyCT}})
		}
	}
	return st
}

func (st *step) hasHeader(name string) bool {
	for _, h := range st.headers {
		if strings.EqualFold(h.name, name) {
			return true
		}
	}
	return false
}

func (st *step) dropHeader(name string) {
	out := st.headers[:0]
	for _, h := range st.headers {
		if !strings.EqualFold(h.name, name) {
			out = append(out, h)
		}
	}
	st.headers = out
}

func isJSONType(ct string) bool {
	mt := mediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

func looksJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// ---------------------------------------------------------------------------
// JSON kept in order, so a converted body reads as it was sent.

type jv struct {
	kind byte // o(bject) a(rray) s(tring) n(umber) b(ool) z (null)
	s    string
	keys []string
	vals []*jv
	f    *field // string and number leaves
}

func parseJSON(b []byte) (*jv, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	v, err := decodeJV(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeJV(d *json.Decoder) (*jv, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jv{kind: 'o'}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				c, err := decodeJV(d)
				if err != nil {
					return nil, err
				}
				v.keys = append(v.keys, k)
				v.vals = append(v.vals, c)
			}
			_, err := d.Token()
			return v, err
		case '[':
			v := &jv{kind: 'a'}
			for d.More() {
				c, err := decodeJV(d)
				if err != nil {
					return nil, err
				}
				v.vals = append(v.vals, c)
			}
			_, err := d.Token()
			return v, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return &jv{kind: 's', s: t, f: &field{value: t}}, nil
	case json.Number:
		return &jv{kind: 'n', s: t.String(), f: &field{value: t.String()}}, nil
	case bool:
		return &jv{kind: 'b', s: strconv.FormatBool(t)}, nil
	case nil:
		return &jv{kind: 'z', s: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}

// leaves calls fn for every string and number with its dotted path, in
// document order; keys a dotted path cannot name are skipped.
func (v *jv) leaves(prefix []string, fn func(p []string, leaf *jv)) {
	switch v.kind {
	case 'o':
		for i, k := range v.keys {
			if k == "" || strings.ContainsAny(k, ". ") {
				continue
			}
			v.vals[i].leaves(append(prefix[:len(prefix):len(prefix)], k), fn)
		}
	case 'a':
		for i, c := range v.vals {
			c.leaves(append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), fn)
		}
	case 's', 'n':
		fn(prefix, v)
	}
}

// numberTemplated reports whether a number leaf became a template: json:
// in a plan would send it as a string, so the body goes out raw instead.
func (v *jv) numberTemplated() bool {
	if v.kind == 'n' && v.f.tmpl != "" {
		return true
	}
	for _, c := range v.vals {
		if c.numberTemplated() {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
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
	return out
}

// candidate says whether a value is specific enough that finding it in a
// response and again in a later request is no coincidence.
func candidate(v string) bool {
	if len(v) < 2 || len(v) > 4096 {
		return false
	}
	switch strings.ToLower(v) {
	case "true", "false", "null", "none", "yes", "no", "on", "off", "ok":
		return false
	}
	digits := true
	for _, c := range v {
		if c < '0' || c > '9' {
			digits = false
			break
		}
	}
	if digits && len(v) < 3 {
		return false
	}
	return strings.ContainsFunc(v, func(r rune) bool {
		return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	})
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// respHeaderSkip are response headers no client sends back as a value.
var respHeaderSkip = map[string]bool{
	"date": true, "content-length": true, "content-type": true, "set-cookie": true, "server": true,
	"connection": true, "keep-alive": true, "transfer-encoding": true, "vary": true, "cache-control": true,
	"expires": true, "last-modified": true, "age": true, "content-encoding": true, "accept-ranges": true,
	"x-content-type-options": true, "strict-transport-security": true,
}

// source finds where response i gives value v, as a capture expression.
func (st *step) source(v string) (kind, expr, hint string, ok bool) {
	x := st.x
	if !st.parsed {
		st.parsed = true
		if len(x.respBody) > 0 && (isJSONType(x.respCT) || looksJSON(x.respBody)) {
			st.respJSON, _ = parseJSON(x.respBody)
		}
	}
	if root := st.respJSON; root != nil {
		{
			var found []string
			root.leaves(nil, func(p []string, l *jv) {
				if found == nil && l.s == v {
					found = append([]string{}, p...)
				}
			})
			if found != nil && len(found) > 0 {
				return "json", strings.Join(found, "."), jsonHint(found), true
			}
		}
	}
	for _, h := range x.respHeaders {
		if respHeaderSkip[strings.ToLower(h.name)] {
			continue
		}
		if strings.TrimSpace(h.value) == v {
			return "header", h.name, strings.ToLower(h.name), true
		}
	}
	if re, hint, ok := regexFor(string(x.respBody), v); ok {
		return "regex", re, hint, true
	}
	return "", "", "", false
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
	re := regexp.QuoteMeta(left) + "(" + valueClass + "+)"
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

var reservedNames = map[string]bool{
	"tenant": true, "vu": true, "iter": true, "uuid": true, "now_ms": true,
	"rand_int": true, "vars": true, "data": true,
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

func correlate(steps []*step, s *Summary) {
	// What value is held under which capture name, and which step
	// captures what: one capture per (step, expression).
	names := map[string]bool{}
	byExpr := map[string]string{}
	uses := map[string]int{}
	for _, st := range steps {
		for _, f := range st.fields() {
			uses[f.value]++
		}
	}
	generated := map[string]bool{}
	held := map[string]string{}
	for j, st := range steps {
		for _, f := range st.fields() {
			v := f.value
			if !candidate(v) {
				continue
			}
			// A value already captured keeps its first name: the response
			// that handed it out is where it comes from.
			if name, ok := held[v]; ok {
				f.tmpl = "{{ " + name + " }}"
				continue
			}
			found := false
			for i := j - 1; i >= 0 && !found; i-- {
				kind, expr, hint, ok := steps[i].source(v)
				if !ok {
					continue
				}
				key := strconv.Itoa(i) + "\x00" + kind + "\x00" + expr
				name, seen := byExpr[key]
				if !seen {
					name = ident(hint)
					if reservedNames[name] {
						name += "_1"
					}
					base := name
					for n := 2; names[name]; n++ {
						name = base + "_" + strconv.Itoa(n)
					}
					names[name] = true
					byExpr[key] = name
					steps[i].captures = append(steps[i].captures, capture{name, kind, expr})
					s.Captures = append(s.Captures, fmt.Sprintf("%s: {%s: %s} from %s %s", name, kind, expr, steps[i].x.method, steps[i].x.u.Path))
				}
				held[v] = name
				f.tmpl = "{{ " + name + " }}"
				found = true
			}
			// A UUID no response handed out was made by the client; a
			// fresh one each iteration is what the client would send. One
			// sent twice must stay one value, so it is left as recorded.
			if !found && uuidRE.MatchString(v) && uses[v] == 1 {
				f.tmpl = "{{ uuid }}"
				if !generated[v] {
					generated[v] = true
					s.Generated = append(s.Generated, fmt.Sprintf("%s in %s %s", v, st.x.method, st.x.u.Path))
				}
			}
		}
		// A long value in a raw body is replaced wherever it appears.
		if st.raw != nil {
			st.rawTemplate(steps[:j], names, byExpr, s)
		}
	}
}

func (st *step) rawTemplate(before []*step, names map[string]bool, byExpr map[string]string, s *Summary) {
	text := st.raw.value
	var out strings.Builder
	changed := false
	// Tokens in the body: runs of the value class of 8 or more.
	re := regexp.MustCompile(valueClass + `{8,}`)
	last := 0
	for _, m := range re.FindAllStringIndex(text, -1) {
		v := text[m[0]:m[1]]
		for i := len(before) - 1; i >= 0; i-- {
			kind, expr, hint, ok := before[i].source(v)
			if !ok {
				continue
			}
			key := strconv.Itoa(i) + "\x00" + kind + "\x00" + expr
			name, seen := byExpr[key]
			if !seen {
				name = ident(hint)
				if reservedNames[name] {
					name += "_1"
				}
				base := name
				for n := 2; names[name]; n++ {
					name = base + "_" + strconv.Itoa(n)
				}
				names[name] = true
				byExpr[key] = name
				before[i].captures = append(before[i].captures, capture{name, kind, expr})
				s.Captures = append(s.Captures, fmt.Sprintf("%s: {%s: %s} from %s %s", name, kind, expr, before[i].x.method, before[i].x.u.Path))
			}
			out.WriteString(lit(text[last:m[0]]))
			out.WriteString("{{ " + name + " }}")
			last = m[1]
			changed = true
			break
		}
	}
	if changed {
		out.WriteString(lit(text[last:]))
		st.raw.tmpl = out.String()
	}
}

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

// ---------------------------------------------------------------------------
// Rendering.

func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	return n
}

func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Content: kv}
}

func flow(n *yaml.Node) *yaml.Node { n.Style = yaml.FlowStyle; return n }

func (st *step) url() string {
	var b strings.Builder
	if st.absolute {
		b.WriteString(st.x.u.Scheme + "://" + st.x.u.Host)
	}
	for i, f := range st.segs {
		if i > 0 {
			b.WriteByte('/')
		}
		if f.tmpl != "" {
			b.WriteString(f.tmpl)
		} else {
			b.WriteString(lit(st.rawSegs[i]))
		}
	}
	if len(st.query) > 0 {
		b.WriteByte('?')
		for i, q := range st.query {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(lit(q.rawName))
			if q.hasEq {
				b.WriteByte('=')
				if q.f.tmpl != "" {
					b.WriteString(q.f.tmpl)
				} else {
					b.WriteString(lit(q.rawVal))
				}
			}
		}
	}
	return b.String()
}

func (v *jv) yamlNode() *yaml.Node {
	switch v.kind {
	case 'o':
		n := mapping()
		for i, k := range v.keys {
			n.Content = append(n.Content, str(litKey(k)), v.vals[i].yamlNode())
		}
		if len(v.keys) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case 'a':
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range v.vals {
			n.Content = append(n.Content, c.yamlNode())
		}
		if len(v.vals) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case 's':
		return str(v.f.text())
	case 'n':
		tag := "!!int"
		if strings.ContainsAny(v.s, ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.s}
	case 'b':
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: v.s}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}

// rawJSON writes the body compact, numbers that became templates unquoted.
func (v *jv) rawJSON(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.WriteString(lit(string(kb)))
			b.WriteByte(':')
			v.vals[i].rawJSON(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, c := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			c.rawJSON(b)
		}
		b.WriteByte(']')
	case 's':
		if v.f.tmpl != "" {
			b.WriteString(`"` + v.f.tmpl + `"`)
		} else {
			sb, _ := json.Marshal(v.s)
			b.WriteString(lit(string(sb)))
		}
	case 'n':
		if v.f.tmpl != "" {
			b.WriteString(v.f.tmpl)
		} else {
			b.WriteString(v.s)
		}
	default:
		b.WriteString(v.s)
	}
}

func durText(d time.Duration) string {
	d = d.Round(10 * time.Millisecond)
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

func render(steps []*step, target string, o Options, s *Summary) ([]byte, error) {
	var list []*yaml.Node
	for i, st := range steps {
		if i > 0 {
			if gap, ok := thinkGap(steps[i-1].x, st.x); ok && gap >= o.MinThink {
				list = append(list, flow(mapping(str("think"), str(durText(gap)))))
			}
		}
		list = append(list, st.node())
	}
	scen := mapping(str("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: list})
	load := mapping(str("stages"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
		flow(mapping(str("duration"), str(durText(o.Duration)), str("users"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(o.Users)})),
	}})
	doc := mapping(
		str("name"), str(litKey(o.Name)),
		str("target"), str(litKey(target)),
		str("scenarios"), mapping(str(ident(o.Name)), scen),
		str("load"), load,
	)
	var head strings.Builder
	src := o.Source
	if src == "" {
		src = "a recording"
	}
	fmt.Fprintf(&head, "# Converted from %s by stampede convert: %d of %d requests kept", litKey(src), s.Kept, s.Total)
	var left []string
	if s.Static > 0 {
		left = append(left, fmt.Sprintf("%d static (--keep-static keeps them)", s.Static))
	}
	if s.ThirdParty > 0 {
		left = append(left, fmt.Sprintf("%d third-party (--keep-third-party keeps them)", s.ThirdParty))
	}
	if s.Other > 0 {
		left = append(left, fmt.Sprintf("%d not sendable", s.Other))
	}
	if len(left) > 0 {
		head.WriteString("; left out: " + strings.Join(left, ", "))
	}
	head.WriteString(".\n# Cookies are left to each user's jar. Check the load below before a real run.\n")
	encode := func() ([]byte, error) {
		var buf bytes.Buffer
		buf.WriteString(head.String())
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		enc.Close()
		return buf.Bytes(), nil
	}
	out, err := encode()
	if err != nil || !bytes.Contains(out, []byte(lbraceRef)) {
		return out, err
	}
	vars := mapping(str("stampede_lbrace"), str("{{"))
	doc.Content = append(doc.Content[:4:4], append([]*yaml.Node{str("vars"), vars}, doc.Content[4:]...)...)
	return encode()
}

// thinkGap is the time the user spent between the end of one request and
// the start of the next; without a recorded duration, between the starts.
func thinkGap(prev, next *exchange) (time.Duration, bool) {
	if prev.start.IsZero() || next.start.IsZero() {
		return 0, false
	}
	end := prev.start
	if prev.hasDur {
		end = end.Add(prev.duration)
	}
	gap := next.start.Sub(end)
	return gap, gap > 0
}

func (st *step) node() *yaml.Node {
	x := st.x
	n := mapping(str(strings.ToLower(x.method)), str(st.url()))
	if len(st.headers) > 0 {
		h := mapping()
		for _, e := range st.headers {
			h.Content = append(h.Content, str(litKey(e.name)), str(e.f.text()))
		}
		n.Content = append(n.Content, str("headers"), h)
	}
	switch {
	case st.json != nil && st.json.numberTemplated():
		var b strings.Builder
		st.json.rawJSON(&b)
		if header(x.headers, "Content-Type") == "" || mediaType(x.bodyCT) == "application/json" {
			// json: would have set it; body: does not.
			found := false
			for _, e := range st.headers {
				found = found || strings.EqualFold(e.name, "Content-Type")
			}
			if !found {
				hn := mapping(str("Content-Type"), str("application/json"))
				if i := indexKey(n, "headers"); i >= 0 {
					n.Content[i+1].Content = append(n.Content[i+1].Content, hn.Content...)
				} else {
					n.Content = append(n.Content, str("headers"), hn)
				}
			}
		}
		n.Content = append(n.Content, str("body"), str(b.String()))
	case st.json != nil:
		n.Content = append(n.Content, str("json"), st.json.yamlNode())
	case st.form != nil:
		f := mapping()
		for _, e := range st.form {
			f.Content = append(f.Content, str(litKey(e.name)), str(e.f.text()))
		}
		n.Content = append(n.Content, str("form"), f)
	case st.raw != nil:
		t := st.raw.tmpl
		if t == "" {
			t = lit(st.raw.value)
		}
		n.Content = append(n.Content, str("body"), str(t))
	}
	if x.status >= 300 && x.status <= 599 {
		// A redirect is answered as recorded: the plan sends the request
		// it led to as a step of its own, as the browser did.
		n.Content = append(n.Content, str("expect"), flow(mapping(str("status"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x.status)})))
	}
	if len(st.captures) > 0 {
		c := mapping()
		for _, e := range st.captures {
			c.Content = append(c.Content, str(e.name), flow(mapping(str(e.kind), str(e.expr))))
		}
		n.Content = append(n.Content, str("capture"), c)
	}
	return n
}

func indexKey(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// isToken is an HTTP header name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

func dupNames(list []kv) bool {
	seen := map[string]bool{}
	for _, e := range list {
		if seen[e.name] {
			return true
		}
		seen[e.name] = true
	}
	return false
}
