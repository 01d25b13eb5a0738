package plan

import (
	"strings"
	"testing"
	"time"
)

// TestConnectionGood checks what the good fixture compiles to: the
// colleague-proposed syntax, field by field.
func TestConnectionGood(t *testing.T) {
	p, err := parseFile(t, "testdata/good/connections.yaml")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Scenario{}
	for _, s := range p.Scenarios {
		byName[s.Name] = s
	}
	env := &Env{Tenant: 2, VU: 7, Captures: []string{"s9", "42"}}

	kd := byName["kitchen-display"]
	c := kd.Connection.Spec()
	if kd.Connection.Kind != KindSignalR || c == nil || c.SignalR == nil {
		t.Fatalf("kitchen-display: %+v", kd.Connection)
	}
	if got := kd.Connection.Count(p.Tenants); got != 6 {
		t.Errorf("per_tenant 2 × 3 tenants = %d connections, want 6", got)
	}
	sr := c.SignalR
	if got := sr.URL.String(env); got != "/hubs/kitchen" {
		t.Errorf("url = %q", got)
	}
	if sr.AccessToken != "s3cret-token" {
		t.Errorf("access_token = %q (want ${API_TOKEN} expanded)", sr.AccessToken)
	}
	if len(sr.Headers) != 1 || sr.Headers[0].Name != "X-Restaurant" || sr.Headers[0].Value.String(env) != "2" {
		t.Errorf("headers = %+v", sr.Headers)
	}
	if sr.KeepAlive != 15*time.Second || sr.ServerTimeout != -1 || sr.HandshakeTimeout != 5*time.Second || sr.Hold != 10*time.Minute {
		t.Errorf("durations: keep_alive %v server_timeout %v handshake %v hold %v", sr.KeepAlive, sr.ServerTimeout, sr.HandshakeTimeout, sr.Hold)
	}
	wantCalls := []struct {
		mode    HubCallMode
		method  string
		args    string
		timeout time.Duration
	}{
		{HubInvoke, "JoinRestaurant", `["2"]`, 5 * time.Second},
		{HubSend, "Hello", `["2",{"device":"7"}]`, 0},
		{HubStream, "RecentOrders", `[20]`, 0},
	}
	if len(sr.Calls) != len(wantCalls) {
		t.Fatalf("calls = %+v", sr.Calls)
	}
	for i, w := range wantCalls {
		g := sr.Calls[i]
		if g.Mode != w.mode || g.Method != w.method || g.Args.String(env) != w.args || g.Timeout != w.timeout {
			t.Errorf("call %d = {%v %s %s %v}, want %+v", i, g.Mode, g.Method, g.Args.String(env), g.Timeout, w)
		}
	}
	if strings.Join(sr.Listen, ",") != "OrderPlaced,OrderUpdated" || strings.Join(sr.Timestamp, ".") != "0.sentAt" {
		t.Errorf("listen %v timestamp %v", sr.Listen, sr.Timestamp)
	}
	if c.Retry != (Retry{Initial: time.Second, Max: 30 * time.Second, Jitter: true}) {
		t.Errorf("reconnect default = %+v", c.Retry)
	}

	tk := byName["ticker"]
	c = tk.Connection.Spec()
	if tk.Connection.Kind != KindWebSocket || c.Users != 5 || tk.Connection.Count(p.Tenants) != 5 {
		t.Fatalf("ticker: %+v %+v", tk.Connection, c)
	}
	w := c.WebSocket
	if got := w.URL.String(env); got != "ws://127.0.0.1:9000/feed?r=2" {
		t.Errorf("ws url = %q", got)
	}
	if strings.Join(w.Subprotocols, ",") != "chat.v1" || w.Captures != 2 || strings.Join(w.CaptureNames, ",") != "sub,n" {
		t.Errorf("subprotocols %v captures %d %v", w.Subprotocols, w.Captures, w.CaptureNames)
	}
	type step struct {
		kind WSStepKind
		name string
	}
	want := []step{{WSSend, "send 1"}, {WSWait, "subscribed"}, {WSSend, "send 3"}, {WSWait, "wait 4"}, {WSSend, "send 5"}, {WSHold, "hold 6"}, {WSClose, "close 7"}}
	if len(w.Steps) != len(want) {
		t.Fatalf("steps = %+v", w.Steps)
	}
	for i, s := range want {
		if w.Steps[i].Kind != s.kind || w.Steps[i].Name != s.name {
			t.Errorf("step %d = %v %q, want %v %q", i, w.Steps[i].Kind, w.Steps[i].Name, s.kind, s.name)
		}
	}
	st := w.Steps
	if got := st[0].Body.String(env); got != `{"subscribe":"2"}` {
		t.Errorf("send json = %s", got)
	}
	if st[1].Timeout != 5*time.Second || strings.Join(st[1].Path, ".") != "type" || st[1].Equals != "subscribed" || len(st[1].Captures) != 1 {
		t.Errorf("wait = %+v", st[1])
	}
	if got := st[2].Body.String(env); got != "ack s9" {
		t.Errorf("send with capture = %q", got)
	}
	if st[3].Regex == nil || st[3].Timeout != defaultWaitTimeout {
		t.Errorf("regex wait = %+v", st[3])
	}
	if !st[4].Binary || st[4].Body.String(env) != "42" {
		t.Errorf("binary send = %+v", st[4])
	}
	if st[5].Hold != 5*time.Minute || st[6].Code != 1000 || st[6].Reason != "bye" {
		t.Errorf("hold %v close %d %q", st[5].Hold, st[6].Code, st[6].Reason)
	}

	// The HTTP scenario alone sets the users: per_tenant 1 × 3 tenants.
	if got := p.PerTenantUsers(); got != 1 {
		t.Errorf("PerTenantUsers = %d, want 1 (connection scenarios are not users)", got)
	}
	if got := p.Load.Stages[0].To; got != 3 {
		t.Errorf("stages scaled to %v users, want 3", got)
	}
}

// TestConnectionErrors pins single mistakes with their place.
func TestConnectionErrors(t *testing.T) {
	cases := []struct {
		name, plan, want string
	}{
		{
			// A relative hub URL needs a target to join it to.
			"relative without target",
			"scenarios:\n  k:\n    users: 1\n    signalr: {url: /hubs/k}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			`p.yaml:4:20: relative URL "/hubs/k" needs a target`,
		},
		{
			// Rows are handed out per iteration; connections have none.
			"data in a connection",
			"target: http://h\ndata: {d: {file: testdata/good/voters.csv}}\nscenarios:\n  k:\n    users: 1\n    signalr: {url: \"/hubs/{{ data.d.voter_id }}\"}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			"p.yaml:6:14: connection scenarios cannot use data sources",
		},
		{
			// Push latency needs targets to time.
			"timestamp without listen",
			"target: http://h\nscenarios:\n  k:\n    users: 1\n    signalr: {url: /h, timestamp: 0.t}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			"p.yaml:5:24: timestamp times pushes to the listen targets",
		},
		{
			// A typo in a websocket step key gets a hint.
			"typo in step",
			"target: http://h\nscenarios:\n  k:\n    users: 1\n    websocket: {url: /ws, steps: [{sned: x}]}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			`p.yaml:5:36: unknown key "sned" in websocket step: did you mean "send"?`,
		},
		{
			// An empty section says what it needs.
			"empty signalr",
			"target: http://h\nscenarios:\n  k:\n    users: 1\n    signalr:\nload: {stages: [{duration: 1s, users: 1}]}\n",
			"signalr section is empty",
		},
		{
			// A users count must be a whole number.
			"bad users",
			"target: http://h\nscenarios:\n  k:\n    users: many\n    signalr: {url: /h}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			`p.yaml:4:12: bad users "many": expected a whole number of at least 1`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.plan), fixtureEnv)
			if err == nil {
				t.Fatal("want an error, got none")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

// TestConnectionOnly: a plan may hold connections and send no request.
func TestConnectionOnly(t *testing.T) {
	src := "target: http://h\ntenants: {count: 4}\nscenarios:\n  k:\n    per_tenant: 3\n    signalr: {url: /h}\nload: {stages: [{duration: 1s, users: 0 -> 1}]}\n"
	p, err := Parse("p.yaml", []byte(src), fixtureEnv)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Scenarios[0].Connection.Count(p.Tenants); got != 12 {
		t.Errorf("count = %d, want 12", got)
	}
	if got := p.Scenarios[0].Connection.Count(10); got != 30 {
		t.Errorf("count at a gate level of 10 tenants = %d, want 30", got)
	}
}
