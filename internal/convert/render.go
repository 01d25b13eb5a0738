package convert

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

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

func durText(d time.Duration) string {
	d = d.Round(10 * time.Millisecond)
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

func render(steps []*step, target string, o Options, s *Summary) ([]byte, error) {
	var list []*yaml.Node
	var draws []draw
	for i, st := range steps {
		if i > 0 {
			if gap, ok := thinkGap(steps[i-1].x, st.x); ok && gap >= o.MinThink {
				list = append(list, flow(mapping(str("think"), str(durText(gap)))))
			}
		}
		for _, name := range st.draws {
			draws = append(draws, draw{at: len(list), name: name})
		}
		list = append(list, st.node())
	}
	list = wrapDraws(list, draws)
	scenarios := mapping()
	if len(list) > 0 {
		scenarios.Content = append(scenarios.Content, str(ident(o.Name)), mapping(str("steps"), &yaml.Node{Kind: yaml.SequenceNode, Content: list}))
	}
	wsNodes, wsNotes := wsScenarios(o.websockets, o.Name, o.Users, o.MinThink)
	scenarios.Content = append(scenarios.Content, wsNodes...)
	s.Notes = append(s.Notes, wsNotes...)
	load := mapping(str("stages"), &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{
		flow(mapping(str("duration"), str(durText(o.Duration)), str("users"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(o.Users)})),
	}})
	doc := mapping(
		str("name"), str(litKey(o.Name)),
		str("target"), str(target),
		str("scenarios"), scenarios,
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
	head.WriteString(".\n# " + cookieComment(steps) + " Check the load below before a real run.\n")
	for _, c := range append(o.Comments, wsNotes...) {
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

// cookieComment says where the plan's cookies come from: each user's jar,
// and for a curl command's -b or Cookie header, that header too, which
// every user sends as given.
func cookieComment(steps []*step) string {
	for _, st := range steps {
		if st.x.fromCurl && st.hasHeader("Cookie") {
			return "The Cookie header is the curl command's own, sent as given by every user; cookies the server sets go to each user's jar."
		}
	}
	return "Cookies are left to each user's jar."
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
	st.bodyNode(n)
	if x.timeout > 0 {
		n.Content = append(n.Content, str("timeout"), str(durText(x.timeout)))
	}
	redirects := x.redirects
	if x.status >= 300 && x.status <= 399 && x.status != 304 {
		// A redirect is answered as recorded: the plan sends the request
		// it led to as a step of its own, as the browser did, so this step
		// must not follow it too. A 304 was the answer to conditional
		// headers the plan does not send, and a recorded error is not what
		// a load test should require.
		redirects = "0"
		n.Content = append(n.Content, str("redirects"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: redirects})
		n.Content = append(n.Content, str("expect"), flow(mapping(str("status"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x.status)})))
	} else if redirects != "" {
		n.Content = append(n.Content, str("redirects"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: redirects})
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

// bodyNode adds the step's body to n, in the plan key that sends it.
func (st *step) bodyNode(n *yaml.Node) {
	switch {
	case st.json != nil && st.json.numberTemplated():
		st.rawJSONNode(n)
	case st.json != nil:
		n.Content = append(n.Content, str("json"), st.json.yamlNode())
	case st.parts != nil:
		m := mapping()
		for _, p := range st.parts {
			m.Content = append(m.Content, str(litKey(p.name)), p.node())
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
}

// rawJSONNode writes a JSON body with a templated number as body: text
// (json: would quote it), with the Content-Type json: would have set.
func (st *step) rawJSONNode(n *yaml.Node) {
	x := st.x
	var b strings.Builder
	st.json.rawJSON(&b)
	if (header(x.headers, "Content-Type") == "" || mediaType(x.bodyCT) == "application/json") && !st.hasHeader("Content-Type") {
		hn := mapping(str("Content-Type"), str("application/json"))
		if i := indexKey(n, "headers"); i >= 0 {
			n.Content[i+1].Content = append(n.Content[i+1].Content, hn.Content...)
		} else {
			n.Content = append(n.Content, str("headers"), hn)
		}
	}
	n.Content = append(n.Content, str("body"), str(b.String()))
}

// node is the part's value in a plan's multipart:.
func (p *partField) node() *yaml.Node {
	switch {
	case p.path != "":
		v := flow(mapping(str("file"), str(litKey(p.path))))
		if p.ctype != "" {
			v.Content = append(v.Content, str("content_type"), str(litKey(p.ctype)))
		}
		if p.file != "" {
			v.Content = append(v.Content, str("filename"), str(litKey(p.file)))
		}
		return v
	case p.ctype != "":
		return mapping(str("value"), str(p.f.text()), str("content_type"), str(litKey(p.ctype)))
	}
	return str(p.f.text())
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
