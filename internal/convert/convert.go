package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/builtin"
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
	// AllowFiles are directories beyond the current one that curl's @FILE
	// may be read from (package localfile): the file goes into the plan.
	AllowFiles []string
	// TargetUserinfo is curl's user:password, with ${ENV} references, for
	// the target; Comments are lines for the plan's header comment (what
	// to set before running it). Both are set by Curl.
	TargetUserinfo string
	Comments       []string
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
	xs, notes, err := parseHAR(data)
	if err != nil {
		return nil, Summary{}, err
	}
	plan, s, err := build(xs, o)
	s.Notes = append(notes, s.Notes...)
	return plan, s, err
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
	// The target is plan text: recorded parts escaped, curl's user:password
	// with its ${ENV} references (curlauth.go) as they are.
	target := litKey(scheme + "://" + main)
	if len(kept) == 1 && kept[0].fromCurl && o.TargetUserinfo != "" {
		target = scheme + "://" + o.TargetUserinfo + "@" + litKey(main)
	}

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
	// expr: the expression tmpl holds (a capture's name), for a raw JSON
	// body to write it escaped.
	expr string
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
	parts    []*partField // multipart
	raw      *field       // a body that is neither JSON nor a form
	captures []capture
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

type partField struct {
	mpart
	f *field // a text field's value
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

// clientHeaders are the ones the HTTP client writes itself, so a plan
// cannot send them.
var clientHeaders = map[string]bool{
	"host": true, "content-length": true, "connection": true, "transfer-encoding": true,
	"keep-alive": true, "upgrade": true, "te": true, "proxy-connection": true,
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
	if x.status >= 400 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s: recorded answer %d; the plan expects a success there (add expect: {status: %d} if the error is the point)", x.method, x.u.Redacted(), x.status, x.status))
	}
	if len(x.respBody) > 0 && (isJSONType(x.respCT) || looksJSON(x.respBody)) && jsonTooDeep(x.respBody) {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s: the response is %v; its fields were not searched for values to capture", x.method, x.u.Redacted(), errJSONTooDeep))
	}
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
		if x.fromCurl && clientHeaders[strings.ToLower(h.name)] {
			s.Notes = append(s.Notes, fmt.Sprintf("header %s: %s left out: stampede's client sets it (Host from the target: put that host in the target, or resolve it to the address you meant)", h.name, h.value))
			continue
		}
		// Every header typed for curl is the user's choice; a browser's
		// are mostly its own.
		if !x.fromCurl && !keepHeader(h.name, h.value) {
			continue
		}
		if !isToken(h.name) || strings.ContainsAny(h.value, "\r\n\x00") {
			s.Notes = append(s.Notes, fmt.Sprintf("%s %s: header %q left out: not a valid HTTP header", x.method, x.u.Redacted(), h.name))
			continue
		}
		if strings.EqualFold(h.name, "Content-Type") && (x.isForm || x.isMultipart || len(x.body) == 0) {
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
		if x.fromCurl && secretHeader(h.name) && strings.Contains(h.value, "${") {
			// curl's credentials became ${ENV} references (curlauth.go):
			// plan text, not a recorded value to escape.
			f.prefix, f.value, f.tmpl = "", h.value, strings.ReplaceAll(h.value, "{{", lbraceRef)
		}
		st.headers = append(st.headers, hdr{h.name, f})
	}
	switch {
	case x.isMultipart:
		seen := map[string]bool{}
		for _, e := range x.multipart {
			switch {
			case seen[e.name] || e.name == "" || strings.ContainsAny(e.name, "\r\n\""):
				s.Notes = append(s.Notes, fmt.Sprintf("%s %s: multipart part %q left out: a plan's multipart names each part once, without quotes or line breaks", x.method, x.u.Redacted(), e.name))
			case e.file != "" && e.path == "":
				s.Notes = append(s.Notes, fmt.Sprintf("%s %s: multipart file %q (%s) left out: a plan reads a multipart file from disk; save it and add %s: {file: PATH}", x.method, x.u.Redacted(), e.name, e.file, e.name))
			default:
				seen[e.name] = true
				st.parts = append(st.parts, &partField{e, &field{value: e.value}})
			}
		}
		if len(st.parts) == 0 {
			// An empty multipart: is refused by the loader; nothing of the
			// body is left to send.
			st.parts = nil
		}
	case x.isForm:
		for _, e := range x.form {
			st.form = append(st.form, &formField{e.name, &field{value: e.value}})
		}
	case len(x.body) > 0:
		if isJSONType(x.bodyCT) || looksJSON(x.body) {
			v, err := parseJSON(x.body)
			if errors.Is(err, errJSONTooDeep) {
				s.Notes = append(s.Notes, fmt.Sprintf("%s %s: the body is %v; it is sent as recorded text, and its values are not templated", x.method, x.u.Redacted(), err))
			}
			if err == nil {
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
	if jsonTooDeep(b) {
		return nil, errJSONTooDeep
	}
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
			name, v, _ := strings.Cut(h.value, ";")
			name, v, ok := strings.Cut(name, "=")
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

// exprWords are names an expression gives a meaning of its own (expr's
// builtins and operators): a capture named so could not be read in one.
var exprWords = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range builtin.Names {
		m[n] = true
	}
	for _, n := range []string{"in", "not", "and", "or", "matches", "contains", "startsWith", "endsWith",
		"let", "nil", "true", "false", "if", "else", "status", "body"} {
		m[n] = true
	}
	return m
}()

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
	if reservedNames[name] || exprWords[name] {
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
	uses := map[string]int{}
	for _, st := range steps {
		for _, f := range st.fields() {
			uses[f.value]++
		}
	}
	generated := map[string]bool{}
	for j, st := range steps {
		segs := map[*field]bool{}
		for _, f := range st.segs {
			segs[f] = true
		}
		for _, f := range st.fields() {
			v := f.value
			if name, ok := c.find(v, segs[f]); ok {
				f.tmpl, f.expr = "{{ "+name+" }}", name
				continue
			}
			// A UUID no response handed out was made by the client; a
			// fresh one each iteration is what the client would send. One
			// sent twice must stay one value, so it is left as recorded.
			if uuidRE.MatchString(v) && uses[v] == 1 {
				f.tmpl = "{{ uuid }}"
				if !generated[v] {
					generated[v] = true
					s.Generated = append(s.Generated, fmt.Sprintf("%s in %s %s", v, st.x.method, st.x.u.Path))
				}
			}
		}
		c.cookieHeaders(st)
		// A long value in a raw body is replaced wherever it appears.
		if st.raw != nil {
			c.rawTemplate(st)
		}
		c.ix.add(j)
	}
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
		switch {
		case v.f.expr != "":
			// A body: template is sent as it renders: toJSON quotes and
			// escapes the value, whatever the server handed out.
			b.WriteString("{{ toJSON(" + v.f.expr + ") }}")
		case v.f.tmpl != "":
			b.WriteString(`"` + v.f.tmpl + `"`)
		default:
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
		str("target"), str(target),
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
	for _, c := range o.Comments {
		head.WriteString("# " + c + "\n")
	}
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
	case st.parts != nil:
		m := mapping()
		for _, p := range st.parts {
			var v *yaml.Node
			switch {
			case p.path != "":
				v = flow(mapping(str("file"), str(litKey(p.path))))
				if p.ctype != "" {
					v.Content = append(v.Content, str("content_type"), str(litKey(p.ctype)))
				}
				if p.file != "" {
					v.Content = append(v.Content, str("filename"), str(litKey(p.file)))
				}
			case p.ctype != "":
				v = mapping(str("value"), str(p.f.text()), str("content_type"), str(litKey(p.ctype)))
			default:
				v = str(p.f.text())
			}
			m.Content = append(m.Content, str(litKey(p.name)), v)
		}
		n.Content = append(n.Content, str("multipart"), m)
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
	if x.status >= 300 && x.status <= 399 && x.status != 304 {
		// A redirect is answered as recorded: the plan sends the request
		// it led to as a step of its own, as the browser did. A 304 was
		// the answer to conditional headers the plan does not send, and a
		// recorded error is not what a load test should require.
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
