package vu

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/plan"
)

var errNoHost = errors.New("rendered URL has no http(s) scheme and host")

// build renders the request of st into the user's reusable buffers.
func (u *User) build(st *Step) error {
	r := &u.req
	r.Method = st.Method
	r.Timeout = st.Timeout
	r.KeepBody = st.keepBody
	r.KeepHead = u.keepHead()
	if err := u.buildTarget(st); err != nil {
		return err
	}
	// The body is rendered before the headers, so a header may sign it
	// (an expression reading body, expr.go).
	r.Body = u.body.render(st, &u.env) // body.go
	u.env.Body = r.Body
	u.buildHeaders(st)
	u.env.Body = nil
	return nil
}

// buildTarget renders the request's endpoint and its path and query.
func (u *User) buildTarget(st *Step) error {
	r := &u.req
	u.scratch = st.URL.Append(u.scratch[:0], &u.env)
	target := u.scratch
	if st.dynamicURL {
		ep, pq, err := u.dynamicEndpoint(string(target))
		if err != nil {
			return err
		}
		r.Endpoint = ep
		target = append(u.scratch[:0], pq...)
	} else {
		r.Endpoint = st.endpoint
		if target[0] != '/' {
			// Absolute URL with a literal origin: keep the path and query.
			i := bytes.Index(target, []byte("://"))
			j := bytes.IndexByte(target[i+3:], '/')
			target = target[i+3+j:]
		}
	}
	for _, q := range st.Query {
		if bytes.IndexByte(target, '?') < 0 {
			target = append(target, '?')
		} else {
			target = append(target, '&')
		}
		target = append(target, url.QueryEscape(q.Name)...)
		target = append(target, '=')
		target = appendQueryEscaped(target, q.Value, &u.env)
	}
	u.scratch = target
	r.PathQuery = target
	return nil
}

// buildHeaders renders the request's headers into one buffer, sliced
// afterwards since the buffer may move while it grows.
func (u *User) buildHeaders(st *Step) {
	r := &u.req
	u.hdrBuf = u.hdrBuf[:0]
	u.spans = u.spans[:0]
	add := func(name string, value func(b []byte) []byte) {
		s := len(u.hdrBuf)
		u.hdrBuf = append(u.hdrBuf, name...)
		m := len(u.hdrBuf)
		u.hdrBuf = value(u.hdrBuf)
		u.spans = append(u.spans, [2]int{s, m}, [2]int{m, len(u.hdrBuf)})
	}
	for _, h := range st.Headers {
		add(h.Name, func(b []byte) []byte { return h.Value.Append(b, &u.env) })
	}
	scriptHeaders := len(u.script.headers)
	if scriptHeaders > 0 {
		u.addScriptHeaders(add) // script.go
	}
	if st.ContentType != "" && !st.hasCT {
		add("Content-Type", func(b []byte) []byte { return append(b, st.ContentType...) })
	}
	if !st.hasUA {
		add("User-Agent", func(b []byte) []byte { return append(b, u.prog.userAgent...) })
	}
	if u.jar != nil {
		if c := u.cookieHeader(r); c != "" {
			add("Cookie", func(b []byte) []byte { return append(b, c...) })
		}
	}
	r.Header = r.Header[:0]
	for i := 0; i < len(u.spans); i += 2 {
		n, v := u.spans[i], u.spans[i+1]
		r.Header = append(r.Header, httpc.Field{Name: u.hdrBuf[n[0]:n[1]], Value: u.hdrBuf[v[0]:v[1]]})
	}
	if len(st.secretHeaders) > 0 || scriptHeaders > 0 {
		u.noteSentSecrets(st, scriptHeaders) // secrets.go
	}
}

func appendQueryEscaped(dst []byte, t *plan.Template, env *plan.Env) []byte {
	if t.Static() {
		for _, p := range t.Parts {
			dst = append(dst, url.QueryEscape(p.Literal)...)
		}
		return dst
	}
	return append(dst, url.QueryEscape(t.String(env))...)
}

func (u *User) dynamicEndpoint(raw string) (*httpc.Endpoint, string, error) {
	pu, err := url.Parse(raw)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, "", fmt.Errorf("%w: %q", errNoHost, raw)
	}
	origin := pu.Scheme + "://" + pu.Host
	if u.dynEP == nil {
		u.dynEP = map[string]*httpc.Endpoint{}
	}
	ep, ok := u.dynEP[origin]
	if !ok {
		if ep, err = endpointOf(origin, u.prog.tlsConfig); err != nil {
			return nil, "", err
		}
		u.dynEP[origin] = ep
	}
	pq := pu.RequestURI()
	return ep, pq, nil
}

func (u *User) requestURL(r *httpc.Request) *url.URL {
	pu, err := url.Parse(r.Endpoint.Scheme + "://" + r.Endpoint.Host + string(r.PathQuery))
	if err != nil {
		return nil
	}
	return pu
}

func (u *User) cookieHeader(r *httpc.Request) string {
	pu := u.requestURL(r)
	if pu == nil {
		return ""
	}
	cs := u.jar.Cookies(pu)
	if len(cs) == 0 {
		return ""
	}
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.Name)
		b.WriteByte('=')
		b.WriteString(c.Value)
	}
	return b.String()
}

func (u *User) storeCookies(st *Step) {
	var cs []*http.Cookie
	for _, f := range u.resp.Header {
		if !strings.EqualFold(string(f.Name), "Set-Cookie") {
			continue
		}
		// A cookie's value is a credential from the moment it is set.
		u.noteHeader(f.Name, f.Value)
		if c, err := http.ParseSetCookie(string(f.Value)); err == nil {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return
	}
	if u.jar == nil {
		u.jar = newJar() // cookiejar.go
	}
	if pu := u.requestURL(&u.req); pu != nil {
		u.jar.SetCookies(pu, cs)
	}
}
