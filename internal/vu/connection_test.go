package vu

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

const sameTemplate = `{{ vars.hub }}/{{ vu }}/{{ tenant }}/{{ iter }}/{{ rand_int(1, 1000000000) }}/{{ uuid }}`

func connPlan(t *testing.T) (*plan.Plan, *Program) {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte(`
target: http://127.0.0.1:1
tenants: {count: 3}
vars: {hub: kitchen}
scenarios:
  h:
    steps:
      - {name: post, post: /x, body: "`+sameTemplate+`"}
  w:
    users: 2
    websocket:
      url: /ws/{{ vars.hub }}/{{ tenant }}
      steps:
        - send: "`+sameTemplate+`"
  s:
    users: 1
    signalr:
      url: /hub
      invoke:
        - {method: Join, args: ["`+sameTemplate+`", 1234567890123456789, 1.50]}
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, "http://127.0.0.1:1", "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	prog.Seed = 7
	return p, prog
}

// A WebSocket send renders a template as a request body does: the same
// variables, and random draws the run's seed reproduces. Before, a
// connection's environment had no generator, so {{ uuid }} and rand_int in
// a send or hub call changed from run to run whatever the seed.
func TestConnectionRendersAsARequestBody(t *testing.T) {
	p, prog := connPlan(t)
	rec := metrics.New(prog.Steps, 1)
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{}).NewTransport(), rec)
	defer u.Close()
	u.SetTenant(2)
	var body string
	for _, sc := range prog.Scenarios {
		if len(sc.Steps) > 0 {
			body = string(u.body.render(sc.Steps[0], &u.env))
		}
	}
	ws := p.Scenarios[1].Connection.Spec().WebSocket
	send := func(pop int) string {
		env := prog.ConnectionEnv(pop, 1, 2, ws.Captures)
		return string(AppendSend(nil, &ws.Steps[0], env))
	}
	first := send(0)
	if again := send(0); again != first {
		t.Errorf("the same seed rendered %q, then %q", first, again)
	}
	sendVars, bodyVars := strings.Split(first, "/")[:4], strings.Split(body, "/")[:4]
	if strings.Join(sendVars, "/") != "kitchen/1/2/0" || strings.Join(bodyVars, "/") != "kitchen/1/2/0" {
		t.Errorf("send %q, request body %q: the variables differ", first, body)
	}
	if first == body {
		t.Errorf("connection 1 drew user 1's random values: %q", first)
	}
	if other := send(1); other == first {
		t.Errorf("two populations' first connections drew alike: %q", other)
	}
	if got := ConnectionURL("http://h:1", ws.URL, prog.ConnectionEnv(0, 1, 2, 0)); got != "http://h:1/ws/kitchen/2" {
		t.Errorf("url %q", got)
	}
}

// A hub call's arguments go out as the JSON text they render to: a big id
// and 1.50 stay as written, and the first argument is the template a send
// renders.
func TestHubArgsKeepTheirText(t *testing.T) {
	p, prog := connPlan(t)
	sr := p.Scenarios[2].Connection.Spec().SignalR
	args, err := HubArgs(&sr.Calls[0], prog.ConnectionEnv(0, 1, 2, 0))
	if err != nil || len(args) != 3 {
		t.Fatalf("%v, %v", args, err)
	}
	ws := p.Scenarios[1].Connection.Spec().WebSocket
	send := string(AppendSend(nil, &ws.Steps[0], prog.ConnectionEnv(0, 1, 2, 0)))
	want := []string{strconvQuote(send), "1234567890123456789", "1.50"}
	for i, a := range args {
		if got := string(a.(json.RawMessage)); got != want[i] {
			t.Errorf("argument %d = %s, want %s", i, got, want[i])
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
