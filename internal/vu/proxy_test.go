package vu

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

func loopWhy(t *testing.T, src string, env map[string]string) string {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return prog.LoopIneligible()
}

// A plan whose requests go through a proxy runs on goroutines (the loop
// dials its one address directly); one the proxy does not take (NO_PROXY,
// loopback) stays on the loop, and so does every plan for redirects
// being followed by default.
func TestProxiedPlansLeaveTheLoop(t *testing.T) {
	const body = `
scenarios:
  s:
    steps:
      - {get: /}
load: {stages: [{duration: 1s, users: 1}]}
`
	proxy := map[string]string{"HTTP_PROXY": "http://proxy.example:3128", "NO_PROXY": "direct.example"}
	for _, c := range []struct {
		target string
		env    map[string]string
		extra  string
		want   string
	}{
		{"http://api.example", nil, "", ""},
		{"http://api.example", proxy, "", "its requests go through a proxy"},
		{"http://direct.example", proxy, "", ""},
		{"http://127.0.0.1:8080", proxy, "", ""},
		{"http://127.0.0.1:8080", nil, "http: {proxy: 'http://127.0.0.1:3128'}\n", ""},
		{"http://api.example", nil, "http: {proxy: 'http://127.0.0.1:3128'}\n", "its requests go through a proxy"},
		{"http://api.example", proxy, "http: {proxy: none}\n", ""},
		{"http://api.example", nil, "http: {redirects: 5}\n", ""},
	} {
		got := loopWhy(t, "target: "+c.target+"\n"+c.extra+body, c.env)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s %v %q: loop refuses with %q, want %q", c.target, c.env, c.extra, got, c.want)
		}
	}
}
