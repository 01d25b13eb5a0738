package plan

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"
	"gopkg.in/yaml.v3"
)

// DefaultRedirects is how many redirects a request follows when neither
// the plan nor the step says: k6's default, and more than any login flow
// needs.
const DefaultRedirects = 10

// Proxy is where a run's requests go when a proxy stands between the
// generator and the target: from HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or
// their lower-case forms), or from the plan's http.proxy, which replaces
// the first two. Which requests it takes is golang.org/x/net's rule, the
// one Go's own clients follow: NO_PROXY's hosts and domains, and loopback
// targets, go direct.
type Proxy struct {
	// Config is what the rule reads.
	Config httpproxy.Config
	fn     func(*url.URL) (*url.URL, error)
}

// For is the proxy a request to scheme://host goes through (nil: direct).
// An error is a proxy setting that cannot be read.
func (p *Proxy) For(scheme, host string) (*url.URL, error) {
	if p == nil {
		return nil, nil
	}
	return p.fn(&url.URL{Scheme: scheme, Host: host})
}

// Func is For as the transports take it (nil when there is no proxy).
func (p *Proxy) Func() func(scheme, host string) (*url.URL, error) {
	if p == nil {
		return nil
	}
	return p.For
}

// Proxied reports whether a request to scheme://host goes through a proxy
// (an unreadable setting counts: the request then fails on it).
func (p *Proxy) Proxied(scheme, host string) bool {
	u, err := p.For(scheme, host)
	return u != nil || err != nil
}

// ProxiedURL is Proxied for a URL such as the target.
func (p *Proxy) ProxiedURL(raw string) bool {
	u, err := url.Parse(raw)
	return p != nil && err == nil && p.Proxied(u.Scheme, u.Host)
}

// EnvProxy is the proxy the environment alone sets, for a plan made in
// memory (stampede url) that has no http.proxy.
// A variable that is no URL is an error (Go's rule would go direct
// without a word).
func EnvProxy(lookup func(string) (string, bool)) (*Proxy, error) {
	c := proxyFromEnv(lookup)
	if err := checkEnvProxy(c); err != nil {
		return nil, err
	}
	return newProxy(c), nil
}

// checkEnvProxy refuses a proxy variable golang.org/x/net would drop
// without a word (its rule reads an unparseable one as no proxy, so the
// run would go direct behind the user's back): a URL as that rule reads
// one, http:// added where the scheme is left out (where a URL with a
// scheme does not parse, that rule would take its scheme for a host).
// The message shows it without its password.
func checkEnvProxy(c httpproxy.Config) error {
	for _, v := range []struct{ name, value string }{{"HTTP_PROXY", c.HTTPProxy}, {"HTTPS_PROXY", c.HTTPSProxy}} {
		if v.value == "" {
			continue
		}
		raw := v.value
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		if u, err := url.Parse(raw); err != nil || u.Host == "" {
			return fmt.Errorf("%s (or its lower-case form) %q is not a proxy URL: expected one such as http://proxy.example:3128, or unset it", v.name, redactRawURL(v.value))
		}
	}
	return nil
}

// redactRawURL hides the password of a URL that may not parse: whatever
// lies between the user name's colon and the last @.
func redactRawURL(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	start := strings.Index(s, "://") + len("://")
	if start < len("://") || start > at {
		start = 0
	}
	colon := strings.Index(s[start:at], ":")
	if colon < 0 {
		return s
	}
	return s[:start+colon+1] + "xxxxx" + s[at:]
}

func newProxy(c httpproxy.Config) *Proxy {
	if c.HTTPProxy == "" && c.HTTPSProxy == "" {
		return nil
	}
	return &Proxy{Config: c, fn: c.ProxyFunc()}
}

// proxyFromEnv reads the proxy variables as curl and Go do: upper case
// first, then lower case (REQUEST_METHOD, CGI's sign that HTTP_PROXY came
// from a request header, is not looked at: stampede is no CGI program).
func proxyFromEnv(lookup func(string) (string, bool)) httpproxy.Config {
	get := func(names ...string) string {
		if lookup == nil {
			return ""
		}
		for _, n := range names {
			if v, ok := lookup(n); ok && v != "" {
				return v
			}
		}
		return ""
	}
	return httpproxy.Config{
		HTTPProxy:  get("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: get("HTTPS_PROXY", "https_proxy"),
		NoProxy:    get("NO_PROXY", "no_proxy"),
	}
}

// resolveProxy settles the run's proxy once the plan is read: http.proxy
// (a URL, or none) over the environment's.
func (p *parser) resolveProxy(lookup func(string) (string, bool)) {
	o := &p.plan.HTTP
	env := proxyFromEnv(lookup)
	if o.ProxySetting == "" {
		if err := checkEnvProxy(env); err != nil {
			p.errAt(Pos{File: p.plan.File, Line: 1, Col: 1}, "%v (http.proxy in the plan would replace it)", err)
			return
		}
	}
	for _, v := range []string{env.HTTPProxy, env.HTTPSProxy} {
		if u, err := url.Parse(v); err == nil {
			p.proxyCredentials(u)
		}
	}
	// The plan's own secrets were settled before (finishSecrets); this
	// adds the environment's proxy passwords to them.
	p.finishSecrets()
	switch o.ProxySetting {
	case "":
		o.Proxy = newProxy(env)
	case "none":
		o.Proxy = nil
	default:
		o.Proxy = newProxy(httpproxy.Config{HTTPProxy: o.ProxySetting, HTTPSProxy: o.ProxySetting, NoProxy: env.NoProxy})
	}
	p.refuseProxiedConnections()
}

// refuseProxiedConnections refuses a WebSocket or SignalR scenario whose
// connections the proxy would take: they dial their host directly, so
// they would bypass the proxy the rest of the run goes through (or fail
// where only the proxy reaches the target). A URL whose host is a
// template cannot be told and is refused too.
func (p *parser) refuseProxiedConnections() {
	px := p.plan.HTTP.Proxy
	if px == nil {
		return
	}
	for _, sc := range p.plan.Scenarios {
		c := sc.Connection.Spec()
		if c == nil {
			continue
		}
		var urls []*Template
		if c.SignalR != nil {
			urls = append(append(urls, c.SignalR.URL), c.SignalR.URLs...)
		}
		if c.WebSocket != nil {
			urls = append(urls, c.WebSocket.URL)
		}
		for _, t := range urls {
			if t == nil || !p.connectionProxied(px, t) {
				continue
			}
			p.errAt(sc.Connection.Pos, "scenario %s: %s connections do not go through a proxy (HTTP_PROXY, HTTPS_PROXY or http.proxy would take %s): set NO_PROXY for its host, or http.proxy: none", q(sc.Name), sc.Connection.Kind, q(redactURL(t.Source)))
			break
		}
	}
}

// connectionProxied says whether the proxy takes a connection URL's host
// (ws and wss as http and https; a relative URL is the target's).
func (p *parser) connectionProxied(px *Proxy, t *Template) bool {
	raw := t.Source
	switch {
	case strings.HasPrefix(raw, "/"):
		raw = p.plan.Target
	case !t.Static():
		return true
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	scheme := map[string]string{"ws": "http", "wss": "https"}[u.Scheme]
	if scheme == "" {
		scheme = u.Scheme
	}
	return px.Proxied(scheme, u.Host)
}

// proxySetting reads http.proxy: an http:// URL (user:password@ sends
// Proxy-Authorization) or none.
func (p *parser) proxySetting(n *yaml.Node) {
	s, ok := p.text(n, "proxy")
	if !ok {
		return
	}
	if s == "none" {
		p.plan.HTTP.ProxySetting = s
		return
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		p.errf(n, "bad proxy %s: expected an http:// proxy URL such as http://proxy.example:3128 (user:password@ for proxy auth), or none", q(redactURL(s)))
		return
	}
	p.proxyCredentials(u)
	p.plan.HTTP.ProxySetting = s
}

// proxyCredentials notes a proxy URL's password, and the
// Proxy-Authorization token made of it, as secrets: the result's plan
// source, reports and messages hide them as they hide the target's.
func (p *parser) proxyCredentials(u *url.URL) {
	if u == nil || u.User == nil {
		return
	}
	pass, has := u.User.Password()
	if !has {
		return
	}
	p.secret(pass)
	p.secret(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass)))
}

// redactURL hides a URL's password, for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	return strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":xxxxx@", 1)
}

// redirects reads a redirect limit: a whole number of hops, 0 for none.
func (p *parser) redirects(n *yaml.Node) (int, bool) {
	return p.intMin(n, "redirects", 0)
}

// RedirectLimit is how many redirects a request of st follows: the step's
// redirects, else the plan's http.redirects, else DefaultRedirects.
func (o *HTTPOptions) RedirectLimit(st *Step) int {
	switch {
	case st != nil && st.Redirects != nil:
		return *st.Redirects
	case o.Redirects != nil:
		return *o.Redirects
	}
	return DefaultRedirects
}

// followedStatus says whether a redirect with a Location would be
// followed rather than be the answer (as vu.isRedirect reads it).
func followedStatus(code int) bool {
	switch code {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// checkRedirectExpects refuses a step whose expect.status accepts only
// redirects it would follow: with redirects on, its answer is never one
// of them, so the check could never pass.
func (p *parser) checkRedirectExpects() {
	scenarios := append([]*Scenario{p.plan.Setup, p.plan.Teardown}, p.plan.Scenarios...)
	for _, sc := range scenarios {
		if sc == nil {
			continue
		}
		for _, st := range sc.Steps {
			if st.Kind != StepRequest || len(st.Expect.Status) == 0 || p.plan.HTTP.RedirectLimit(st) == 0 {
				continue
			}
			only := true
			for _, m := range st.Expect.Status {
				only = only && m.Code != 0 && followedStatus(m.Code)
			}
			if only {
				p.errAt(st.Pos, "step %s expects status %d, a redirect it follows (redirects are on: the answer checked is the last one): set redirects: 0 on the step (or http.redirects: 0) to measure the redirect itself", q(st.Name), st.Expect.Status[0].Code)
			}
		}
	}
}
