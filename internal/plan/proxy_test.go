package plan

import (
	"strings"
	"testing"
)

const proxyPlanBody = `
scenarios:
  s:
    steps:
      - {get: /}
load: {stages: [{duration: 1s, users: 1}]}
`

func envOf(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func proxyOf(t *testing.T, http string, env map[string]string) *Proxy {
	t.Helper()
	src := "target: http://api.example.com\n" + http + proxyPlanBody
	p, err := Parse("t.yaml", []byte(src), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return p.HTTP.Proxy
}

func proxyFor(t *testing.T, px *Proxy, scheme, host string) string {
	t.Helper()
	u, err := px.For(scheme, host)
	if err != nil {
		t.Fatalf("%s://%s: %v", scheme, host, err)
	}
	if u == nil {
		return "direct"
	}
	return u.String()
}

// HTTP_PROXY and HTTPS_PROXY (upper case before lower) pick the proxy per
// scheme; NO_PROXY's hosts, domains and addresses, and loopback, go
// direct.
func TestProxyFromTheEnvironment(t *testing.T) {
	px := proxyOf(t, "", map[string]string{
		"HTTP_PROXY":  "http://p1:3128",
		"http_proxy":  "http://lower:1",
		"https_proxy": "http://p2:3128",
		"NO_PROXY":    "internal.example,.corp.example,10.0.0.0/8,exact.example:8080",
	})
	for _, c := range []struct{ scheme, host, want string }{
		{"http", "api.example.com", "http://p1:3128"},
		{"https", "api.example.com", "http://p2:3128"},
		{"http", "internal.example", "direct"},
		{"http", "a.internal.example", "direct"},
		{"https", "x.corp.example", "direct"},
		{"http", "corp.example", "http://p1:3128"}, // a leading dot: subdomains only
		{"http", "10.1.2.3:80", "direct"},
		{"http", "11.1.2.3:80", "http://p1:3128"},
		{"http", "exact.example:8080", "direct"},
		{"http", "exact.example:9090", "http://p1:3128"},
		{"http", "127.0.0.1:8080", "direct"},
		{"http", "localhost:8080", "direct"},
	} {
		if got := proxyFor(t, px, c.scheme, c.host); got != c.want {
			t.Errorf("%s://%s: %s, want %s", c.scheme, c.host, got, c.want)
		}
	}
	if !px.ProxiedURL("http://api.example.com/x") || px.ProxiedURL("http://internal.example/") {
		t.Errorf("ProxiedURL disagrees with For")
	}
}

// http.proxy replaces the environment's proxies (NO_PROXY still counts);
// none turns them off; with neither there is no proxy at all.
func TestProxyPlanSettingOverTheEnvironment(t *testing.T) {
	env := map[string]string{"HTTP_PROXY": "http://envproxy:1", "HTTPS_PROXY": "http://envproxy:2", "NO_PROXY": "skip.example"}
	px := proxyOf(t, "http: {proxy: 'http://u:p@planproxy:8080'}\n", env)
	if got := proxyFor(t, px, "https", "api.example.com"); got != "http://u:p@planproxy:8080" {
		t.Errorf("https: %s", got)
	}
	if got := proxyFor(t, px, "http", "skip.example"); got != "direct" {
		t.Errorf("NO_PROXY host: %s", got)
	}
	if px := proxyOf(t, "http: {proxy: none}\n", env); px != nil {
		t.Errorf("proxy: none left %+v", px.Config)
	}
	if px := proxyOf(t, "", nil); px != nil || px.Func() != nil || px.Proxied("http", "a") {
		t.Errorf("no setting and no environment made a proxy")
	}
}

func TestProxyBadSetting(t *testing.T) {
	for _, v := range []string{"socks5://p:1080", "not a url", "http://", "http://p:1/path"} {
		_, err := Parse("t.yaml", []byte("target: http://a.example\nhttp: {proxy: '"+v+"'}\n"+proxyPlanBody), nil)
		if err == nil || !strings.Contains(err.Error(), "t.yaml:2:") || !strings.Contains(err.Error(), "bad proxy") {
			t.Errorf("%s: %v", v, err)
		}
	}
	_, err := Parse("t.yaml", []byte("target: http://a.example\nhttp: {proxy: 'ftp://u:hunter2@p:1'}\n"+proxyPlanBody), nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password shows in %v", err)
	}
}

// The redirect limit: the step's, else the plan's, else 10; 0 is off and
// a negative count is an error at its place.
func TestRedirectLimits(t *testing.T) {
	p, err := Parse("t.yaml", []byte(`target: http://a.example
http: {redirects: 3}
scenarios:
  s:
    steps:
      - {name: a, get: /}
      - {name: b, get: /, redirects: 0}
      - {name: c, get: /, redirects: 20}
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, st := range p.Scenarios[0].Steps {
		got = append(got, p.HTTP.RedirectLimit(st))
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 0 || got[2] != 20 {
		t.Errorf("limits %v, want [3 0 20]", got)
	}
	if l := (&HTTPOptions{}).RedirectLimit(&Step{}); l != 10 {
		t.Errorf("default %d", l)
	}
	_, err = Parse("t.yaml", []byte("target: http://a.example\nscenarios:\n  s:\n    steps:\n      - {get: /, redirects: -1}\nload: {stages: [{duration: 1s, users: 1}]}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:5:") || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("negative redirects: %v", err)
	}
}

// The proxy's password, and the Proxy-Authorization token made of it,
// are secrets: the plan's source as results keep it (Redact) hides them,
// from http.proxy and from the environment alike.
func TestProxyPasswordIsASecret(t *testing.T) {
	p, err := Parse("t.yaml", []byte("target: http://a.example\nhttp: {proxy: 'http://ann:pl4inT3xt@proxy.example:3128'}\n"+proxyPlanBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	token := "YW5uOnBsNGluVDN4dA==" // base64 of ann:pl4inT3xt
	got := p.Redact(string(p.Source) + " Proxy-Authorization: Basic " + token)
	if strings.Contains(got, "pl4inT3xt") || strings.Contains(got, token) || !strings.Contains(got, "proxy.example:3128") {
		t.Errorf("redacted source: %s", got)
	}
	p = parseWithEnv(t, map[string]string{"HTTPS_PROXY": "http://bob:envS3cret@proxy.example:3128"})
	if got := p.Redact("proxy http://bob:envS3cret@proxy.example:3128 refused"); strings.Contains(got, "envS3cret") {
		t.Errorf("the environment's proxy password shows: %s", got)
	}
}

func parseWithEnv(t *testing.T, env map[string]string) *Plan {
	t.Helper()
	p, err := Parse("t.yaml", []byte("target: http://a.example\n"+proxyPlanBody), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A proxy variable that is no URL is an error naming it (its password
// hidden), never a run that goes direct without a word; a host without
// a scheme is read as http:// as Go reads it; http.proxy replaces it.
func TestProxyUnreadableEnvironment(t *testing.T) {
	bad := map[string]string{"HTTP_PROXY": "http://u:hunter2@pr oxy:1"}
	_, err := Parse("t.yaml", []byte("target: http://a.example\n"+proxyPlanBody), envOf(bad))
	if err == nil || !strings.Contains(err.Error(), "HTTP_PROXY") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("plan: %v", err)
	}
	if _, err := EnvProxy(envOf(bad)); err == nil || !strings.Contains(err.Error(), "HTTP_PROXY") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("EnvProxy: %v", err)
	}
	if px, err := EnvProxy(envOf(map[string]string{"https_proxy": "proxy.example:3128"})); err != nil || proxyFor(t, px, "https", "a.example") != "http://proxy.example:3128" {
		t.Errorf("a bare host: %v", err)
	}
	if _, err := Parse("t.yaml", []byte("target: http://a.example\nhttp: {proxy: none}\n"+proxyPlanBody), envOf(bad)); err != nil {
		t.Errorf("http.proxy: none still read HTTP_PROXY: %v", err)
	}
}

// A step that expects only a redirect it follows could never pass: an
// error at the step, saying to set redirects: 0; with redirects: 0, or a
// status that is not followed (304), or beside another, it loads.
func TestExpectedRedirectNeedsRedirectsOff(t *testing.T) {
	const head = "target: http://a.example\nscenarios:\n  s:\n    steps:\n      - {name: x, get: /, "
	const tail = "}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	_, err := Parse("t.yaml", []byte(head+"expect: {status: 302}"+tail), nil)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:5:") || !strings.Contains(err.Error(), "redirects: 0") {
		t.Errorf("expect 302 with redirects on: %v", err)
	}
	_, err = Parse("t.yaml", []byte("setup:\n  - {get: /s, expect: {status: [301, 308]}}\n"+head+"expect: {status: 200}"+tail), nil)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:2:") {
		t.Errorf("setup expecting 301 or 308: %v", err)
	}
	for _, ok := range []string{"expect: {status: 302}, redirects: 0", "expect: {status: 304}", "expect: {status: [200, 302]}", "expect: {status: 3xx}"} {
		if _, err := Parse("t.yaml", []byte(head+ok+tail), nil); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if _, err := Parse("t.yaml", []byte("http: {redirects: 0}\n"+head+"expect: {status: 302}"+tail), nil); err != nil {
		t.Errorf("http.redirects: 0: %v", err)
	}
}

// A WebSocket or SignalR scenario the proxy would take is refused at its
// place: its connections dial directly and would bypass the proxy. One
// whose host the proxy leaves alone (NO_PROXY, loopback) loads.
func TestProxiedConnectionScenarioRefused(t *testing.T) {
	const src = "target: http://app.example\nscenarios:\n  k:\n    users: 1\n    websocket: {url: %s}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	env := map[string]string{"HTTP_PROXY": "http://proxy.example:3128", "HTTPS_PROXY": "http://proxy.example:3128"}
	for _, u := range []string{"/ws", "wss://other.example/w"} {
		_, err := Parse("t.yaml", []byte(strings.Replace(src, "%s", u, 1)), envOf(env))
		if err == nil || !strings.Contains(err.Error(), "t.yaml:5:") || !strings.Contains(err.Error(), "do not go through a proxy") {
			t.Errorf("%s: %v", u, err)
		}
	}
	env["NO_PROXY"] = "app.example"
	if _, err := Parse("t.yaml", []byte(strings.Replace(src, "%s", "/ws", 1)), envOf(env)); err != nil {
		t.Errorf("NO_PROXY for the host: %v", err)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(strings.Replace(src, "%s", "/ws", 1), "app.example", "127.0.0.1:9", 1)), envOf(env)); err != nil {
		t.Errorf("a loopback target: %v", err)
	}
}
