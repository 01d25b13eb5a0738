package convert

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

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
	// draws are the client-made UUIDs first sent here and sent again
	// later, drawn once per iteration from here on (clientvalues.go).
	draws []string
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
	st.splitURL()
	if x.isForm && dupNames(x.form) {
		sendFormAsRecorded(x)
	}
	for _, h := range x.headers {
		st.addHeader(h, s)
	}
	switch {
	case x.isMultipart:
		st.addMultipart(s)
	case x.isForm:
		for _, e := range x.form {
			st.form = append(st.form, &formField{e.name, &field{value: e.value}})
		}
	case len(x.body) > 0:
		st.addBody(s)
	}
	return st
}

// splitURL takes the path's segments and the query's parts apart, each
// decoded as the server reads it.
func (st *step) splitURL() {
	x := st.x
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
	if x.u.RawQuery == "" {
		return
	}
	for _, part := range strings.Split(x.u.RawQuery, "&") {
		n, v, eq := strings.Cut(part, "=")
		dv, err := url.QueryUnescape(v)
		if err != nil {
			dv = v
		}
		st.query = append(st.query, &qpart{rawName: n, hasEq: eq, f: &field{value: dv}, rawVal: v})
	}
}

// sendFormAsRecorded turns a form with a repeated name into a raw body:
// a=1&a=2 is a list to the server, and a plan's form: names each field
// once.
func sendFormAsRecorded(x *exchange) {
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

// addHeader keeps a recorded header the plan should send, or says why it
// left it out.
func (st *step) addHeader(h kv, s *Summary) {
	x := st.x
	if x.fromCurl && clientHeaders[strings.ToLower(h.name)] {
		s.Notes = append(s.Notes, fmt.Sprintf("header %s: %s left out: stampede's client sets it (Host from the target: put that host in the target, or resolve it to the address you meant)", h.name, h.value))
		return
	}
	// Every header typed for curl is the user's choice; a browser's are
	// mostly its own.
	if !x.fromCurl && !keepHeader(h.name, h.value) {
		return
	}
	if !isToken(h.name) || strings.ContainsAny(h.value, "\r\n\x00") {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s: header %q left out: not a valid HTTP header", x.method, x.u.Redacted(), h.name))
		return
	}
	if strings.EqualFold(h.name, "Content-Type") && (x.isForm || x.isMultipart || len(x.body) == 0) {
		return
	}
	if st.mergeHeader(h) {
		return
	}
	f := &field{value: h.value}
	if scheme, tok, ok := strings.Cut(h.value, " "); ok && strings.EqualFold(h.name, "Authorization") && !strings.EqualFold(scheme, "Basic") {
		f.prefix, f.value = scheme+" ", tok
	}
	if x.fromCurl && strings.Contains(h.value, "${") {
		// curl's shell variables became ${ENV} references (curlauth.go):
		// plan text, not a recorded value to escape.
		f.prefix, f.value, f.tmpl = "", h.value, strings.ReplaceAll(h.value, "{{", lbraceRef)
	}
	st.headers = append(st.headers, hdr{h.name, f})
}

// mergeHeader appends a header sent twice to its first value: it is one
// list to the server, and a plan names each header once.
func (st *step) mergeHeader(h kv) bool {
	for _, prev := range st.headers {
		if strings.EqualFold(prev.name, h.name) {
			sep := ", "
			if strings.EqualFold(h.name, "Cookie") {
				sep = "; "
			}
			prev.f.value = prev.f.prefix + prev.f.value + sep + h.value
			prev.f.prefix = ""
			return true
		}
	}
	return false
}

// addMultipart keeps the parts a plan's multipart: can send.
func (st *step) addMultipart(s *Summary) {
	x := st.x
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
}

// addBody keeps a body that is neither a form nor multipart: as JSON
// whose values can be templated, else as text.
func (st *step) addBody(s *Summary) {
	x := st.x
	if !x.rawBody && (isJSONType(x.bodyCT) || looksJSON(x.body)) {
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
			return
		}
	}
	if !utf8.Valid(x.body) {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s: the body is binary (%d bytes) and was left out; a plan body is text", x.method, x.u.Redacted(), len(x.body)))
		st.dropHeader("Content-Type")
		return
	}
	st.raw = &field{value: string(x.body)}
	if !st.hasHeader("Content-Type") && x.bodyCT != "" {
		st.headers = append(st.headers, hdr{"Content-Type", &field{value: x.bodyCT}})
	}
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
