package plan

import (
	"strings"
	"testing"
	"time"
)

func connPlan(section string) string {
	return "target: http://h\ntenants: {count: 4}\nscenarios:\n  k:\n    users: 8\n    signalr: " + section + "\nload: {stages: [{duration: 1s, users: 1}]}\n"
}

// reconnect: a duration keeps meaning the first delay; a mapping sets
// each part, the others keep their defaults.
func TestReconnectPolicy(t *testing.T) {
	cases := []struct {
		section string
		want    Retry
	}{
		{"{url: /h}", Retry{Initial: time.Second, Max: 30 * time.Second, Jitter: true}},
		{"{url: /h, reconnect: 250ms}", Retry{Initial: 250 * time.Millisecond, Max: 30 * time.Second, Jitter: true}},
		{"{url: /h, reconnect: 2m}", Retry{Initial: 2 * time.Minute, Max: 2 * time.Minute, Jitter: true}},
		{"{url: /h, reconnect: {initial: 2s, max: 1m, attempts: 10, jitter: none}}", Retry{Initial: 2 * time.Second, Max: time.Minute, Attempts: 10}},
		{"{url: /h, reconnect: {attempts: 3}}", Retry{Initial: time.Second, Max: 30 * time.Second, Attempts: 3, Jitter: true}},
	}
	for _, c := range cases {
		p, err := Parse("p.yaml", []byte(connPlan(c.section)), fixtureEnv)
		if err != nil {
			t.Fatalf("%s: %v", c.section, err)
		}
		if got := p.Scenarios[0].Connection.Spec().Retry; got != c.want {
			t.Errorf("%s: %+v, want %+v", c.section, got, c.want)
		}
	}
	// WebSocket scenarios read the same key.
	src := "target: http://h\nscenarios:\n  k:\n    users: 1\n    websocket: {url: /ws, reconnect: {initial: 5s, attempts: 2}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	p, err := Parse("p.yaml", []byte(src), fixtureEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Scenarios[0].Connection.Spec().Retry; got != (Retry{Initial: 5 * time.Second, Max: 30 * time.Second, Attempts: 2, Jitter: true}) {
		t.Errorf("websocket reconnect: %+v", got)
	}
}

// urls spreads a hub scenario over several hubs; spread says how.
func TestHubURLs(t *testing.T) {
	p, err := Parse("p.yaml", []byte(connPlan("{urls: [http://a:1/hubs/k, \"http://b:2/hubs/k?key=secret\"], spread: tenant}")), fixtureEnv)
	if err != nil {
		t.Fatal(err)
	}
	sr := p.Scenarios[0].Connection.Spec().SignalR
	if len(sr.URLs) != 2 || sr.Spread != SpreadTenant || sr.URL != nil {
		t.Fatalf("urls %d spread %q url %v", len(sr.URLs), sr.Spread, sr.URL)
	}
	if HubName(sr.URLs[1]) != "http://b:2/hubs/k" {
		t.Errorf("hub name %q keeps the query", HubName(sr.URLs[1]))
	}
	p, err = Parse("p.yaml", []byte(connPlan("{urls: [http://a:1/h, http://b:1/h]}")), fixtureEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Scenarios[0].Connection.Spec().SignalR.Spread; got != SpreadRoundRobin {
		t.Errorf("default spread %q", got)
	}
}

func TestReconnectAndHubErrors(t *testing.T) {
	cases := []struct{ section, want string }{
		{"{url: /h, reconnect: {initial: 5s, max: 1s}}", "p.yaml:6:54: reconnect max 1s is below its initial delay 5s"},
		{"{url: /h, reconnect: {attempts: -1}}", `p.yaml:6:46: bad reconnect attempts "-1": expected a whole number of at least 0`},
		{"{url: /h, reconnect: {attempts: 70000}}", "p.yaml:6:46: reconnect attempts 70000 is too many: expected at most 65535, or 0 (never give up)"},
		{"{url: /h, reconnect: {jitter: ful}}", `p.yaml:6:44: bad reconnect jitter "ful": expected full (a delay drawn from zero to the backoff) or none (the backoff exactly) (did you mean "full"?)`},
		{"{url: /h, reconnect: {intial: 1s}}", `p.yaml:6:36: unknown key "intial" in reconnect: did you mean "initial"?`},
		{"{url: /h, reconnect: soon}", `p.yaml:6:35: bad duration "soon"`},
		{"{url: /h, urls: [http://a/h]}", "p.yaml:6:15: signalr section has both url and urls"},
		{"{urls: []}", "p.yaml:6:21: urls is empty"},
		{"{urls: [ftp://a/h]}", `p.yaml:6:22: bad url "ftp://a/h"`},
		{"{url: /h, spread: tenant}", "p.yaml:6:24: spread applies to urls"},
		{"{urls: [http://a/h, http://b/h], spread: tenants}", `p.yaml:6:55: bad spread "tenants": expected round_robin (connection by connection) or tenant (a tenant's connections on one hub) (did you mean "tenant"?)`},
	}
	for _, c := range cases {
		_, err := Parse("p.yaml", []byte(connPlan(c.section)), fixtureEnv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.section, err, c.want)
		}
	}
	// spread: tenant needs the pool.
	src := "target: http://h\nscenarios:\n  k:\n    users: 2\n    signalr: {urls: [http://a/h, http://b/h], spread: tenant}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	if _, err := Parse("p.yaml", []byte(src), fixtureEnv); err == nil || !strings.Contains(err.Error(), "p.yaml:5:55: spread: tenant needs a tenant pool") {
		t.Errorf("tenant spread without a pool: %v", err)
	}
}
