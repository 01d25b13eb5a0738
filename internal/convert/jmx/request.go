package jmx

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

var methods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true}

// http is a sampler's request as its own fields and the HTTP Request
// Defaults in scope make it.
type http struct {
	protocol, domain, port, path, method string
	args                                 []argument
	raw, multipart                       bool
	timeout                              string
}

// resolve fills a sampler's empty fields from the defaults in scope, the
// innermost first.
func resolve(e *elem, sc scope) http {
	h := http{
		protocol: e.prop("HTTPSampler.protocol"), domain: e.prop("HTTPSampler.domain"),
		port: e.prop("HTTPSampler.port"), path: e.rawProp("HTTPSampler.path"),
		method: strings.ToUpper(e.prop("HTTPSampler.method")),
		args:   e.arguments("HTTPsampler.Arguments"), raw: e.boolProp("HTTPSampler.postBodyRaw", false),
		multipart: e.boolProp("HTTPSampler.DO_MULTIPART_POST", false),
		timeout:   e.prop("HTTPSampler.response_timeout"),
	}
	for i := len(sc.defaults) - 1; i >= 0; i-- {
		d := sc.defaults[i]
		fill(&h.protocol, d.prop("HTTPSampler.protocol"))
		fill(&h.domain, d.prop("HTTPSampler.domain"))
		fill(&h.port, d.prop("HTTPSampler.port"))
		fill(&h.path, d.rawProp("HTTPSampler.path"))
		fill(&h.timeout, d.prop("HTTPSampler.response_timeout"))
		if len(h.args) == 0 && !h.raw {
			h.args = d.arguments("HTTPsampler.Arguments")
			h.raw = d.boolProp("HTTPSampler.postBodyRaw", false)
		} else {
			h.args = mergeArgs(h, d)
		}
	}
	fill(&h.protocol, "http")
	fill(&h.method, "GET")
	return h
}

// mergeArgs adds the defaults' parameters to a sampler's own, as JMeter
// does; a parameter the sampler names itself keeps its value, and a raw
// body takes none.
func mergeArgs(h http, d *elem) []argument {
	defs := d.arguments("HTTPsampler.Arguments")
	if h.raw || d.boolProp("HTTPSampler.postBodyRaw", false) {
		return h.args
	}
	own := map[string]bool{}
	for _, a := range h.args {
		own[a.name] = true
	}
	out := h.args
	for _, a := range defs {
		if !own[a.name] {
			out = append(out, a)
		}
	}
	return out
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// origin is protocol://domain[:port] as plan text. A server named by a
// CSV column is templated (perStep: the step's URL carries it, for a
// target cannot); one the plan cannot name (a placeholder such as
// "{my-app-endpoint}", a script, nothing at all) is ${TARGET}, which the
// user sets.
func (c *conv) origin(h http, where string) (o string, perStep bool) {
	domain := strings.TrimSpace(h.domain)
	port := c.text(h.port, modePlain, where)
	if port == "80" && h.protocol == "http" || port == "443" && h.protocol == "https" {
		port = ""
	}
	if port != "" {
		port = ":" + port
	}
	scheme := c.text(strings.ToLower(h.protocol), modePlain, where) + "://"
	if name, ok := soleRef(domain); ok {
		if col, ok := c.columns[name]; ok && c.vars[name] == "" && c.captures[name] == "" {
			c.note("%s: the server is the CSV column %s: each step's URL names it", where, name)
			return scheme + "{{ data." + col + " }}" + port, true
		}
	}
	c.quiet++
	host := c.text(domain, modePlain, where)
	c.quiet--
	if !hostLike(host) {
		return c.targetFallback(domain, where), false
	}
	return scheme + c.text(domain, modePlain, where) + port, false
}

// soleRef is the variable name of text that is one ${name} reference.
func soleRef(s string) (string, bool) {
	if !strings.HasPrefix(s, "${") || refEnd(s, 0) != len(s)-1 || strings.HasPrefix(s, "${__") {
		return "", false
	}
	return strings.TrimSpace(s[2 : len(s)-1]), true
}

var (
	envRef   = regexp.MustCompile(`\$\{[A-Za-z_]\w*(?::-[^${}]*)?\}`)
	hostName = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])$`)
)

// hostLike says whether converted text is a host name once its
// environment references are set.
func hostLike(s string) bool {
	return hostName.MatchString(envRef.ReplaceAllString(s, "x"))
}

func (c *conv) targetFallback(domain, where string) string {
	c.required["TARGET"] = true
	what := "no server name here or in HTTP Request Defaults"
	if domain != "" {
		what = "the server name " + strconv.Quote(domain) + " is not a host the plan can name"
	}
	c.note("%s: %s: the target is ${TARGET}: set TARGET to the server's base URL (https://host:port)", where, what)
	return "${TARGET}"
}

// sampler converts an HTTP sampler into its think steps (the timers in
// scope, which JMeter runs before it) and its request step.
func (c *conv) sampler(e *elem, sc scope) []*yaml.Node {
	c.res.Samplers++
	own := sc.with(c, e)
	for _, ch := range e.children {
		if ch.enabled && kindOf(ch) == kindOther {
			c.skip(ch.where(), "not converted")
		}
	}
	h := resolve(e, own)
	if !methods[h.method] {
		c.skip(e.where(), "method "+h.method+" (a plan sends GET, POST, PUT, PATCH, DELETE, HEAD)")
		return nil
	}
	out := c.timers(own.timers)
	step := newNode()
	if e.name != "" {
		step.add("name", str(c.literal(e.name, modePlain)))
	}
	if own.group != "" {
		step.add("group", str(c.literal(own.group, modePlain)))
	}
	step.add(strings.ToLower(h.method), str(c.url(h, e.where())))
	if hs := c.headers(own.headers, e.where()); hs != nil {
		step.add("headers", hs)
	}
	c.params(step, h, e)
	// JMeter follows redirects only when a sampler says so (the GUI's
	// default): without either setting it reports the 3xx itself.
	if !e.boolProp("HTTPSampler.follow_redirects", false) && !e.boolProp("HTTPSampler.auto_redirects", false) {
		step.add("redirects", plain("0"))
	}
	c.checks(step, own, h, e)
	c.res.Steps++
	return append(out, step.m)
}

// url is the step's URL: a path when the sampler's server is the plan's
// target (the first sampler's), else the whole URL.
func (c *conv) url(h http, where string) string {
	path := c.text(h.path, modeTemplate, where)
	if strings.Contains(h.path, "://") {
		return path
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	o, perStep := c.origin(h, where)
	if perStep {
		return o + path
	}
	if c.target == "" {
		c.target = o
	}
	if o == c.target {
		return path
	}
	return o + path
}

// headers merges the header managers in scope: an inner one's header
// replaces an outer one's of the same name, as in JMeter.
func (c *conv) headers(managers []*elem, where string) *yaml.Node {
	type kv struct{ k, v string }
	var list []kv
	at := map[string]int{}
	for _, m := range managers {
		for _, x := range m.collection("HeaderManager.headers") {
			h := newElem(x, "x")
			name := strings.TrimSpace(h.prop("Header.name"))
			if name == "" {
				continue
			}
			lk := strings.ToLower(name)
			if lk == "content-length" || lk == "host" {
				c.skip(m.where(), "header "+name+" (the client sets it)")
				continue
			}
			v := c.text(h.rawProp("Header.value"), modeTemplate, m.where())
			if i, ok := at[lk]; ok {
				list[i].v = v
				continue
			}
			at[lk] = len(list)
			list = append(list, kv{name, v})
		}
	}
	if len(list) == 0 {
		return nil
	}
	n := mapping()
	for _, x := range list {
		n.Content = append(n.Content, str(x.k), str(x.v))
	}
	return n
}

// params writes the sampler's parameters: a raw body, a multipart or
// urlencoded form, or the query of a request without a body.
func (c *conv) params(step *node, h http, e *elem) {
	if len(h.args) == 0 {
		return
	}
	where := e.where()
	if h.raw {
		var b strings.Builder
		for _, a := range h.args {
			b.WriteString(a.value)
		}
		step.add("body", str(c.text(b.String(), modeTemplate, where)))
		return
	}
	key := "query"
	if h.method == "POST" || h.method == "PUT" || h.method == "PATCH" {
		key = "form"
		if h.multipart {
			key = "multipart"
		}
	}
	if files := e.props["HTTPsampler.Files"]; files != nil && len(newElem(files, "x").collection("HTTPFileArgs.files")) > 0 {
		c.skip(where, "file uploads (HTTPsampler.Files): write them as multipart file parts")
	}
	m := mapping()
	seen := map[string]bool{}
	for _, a := range h.args {
		if a.name == "" || seen[a.name] {
			c.skip(where, "parameter "+strconv.Quote(a.name)+" (unnamed or repeated)")
			continue
		}
		seen[a.name] = true
		m.Content = append(m.Content, str(c.text(a.name, modePlain, where)), str(c.text(a.value, modeTemplate, where)))
	}
	if len(m.Content) > 0 {
		step.add(key, m)
	}
}
