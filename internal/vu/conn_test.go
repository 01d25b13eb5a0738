package vu

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// stepLog keeps what a connection's user recorded, in order.
type stepLog struct {
	mu   sync.Mutex
	rows []string
}

func (l *stepLog) add(op string, class sample.Class, err error) {
	row := op + " " + class.String()
	if err != nil {
		row += ": " + err.Error()
	}
	l.mu.Lock()
	l.rows = append(l.rows, row)
	l.mu.Unlock()
}

func (l *stepLog) RecordWS(op ws.Op, class sample.Class, _ time.Duration, err error) {
	l.add(op.String(), class, err)
}

func (l *stepLog) Unsent(op signalr.Op, class sample.Class, err error) {
	l.add(op.String(), class, err)
}

// echo answers every message with itself.
func echo(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	for {
		typ, msg, err := c.Read(r.Context())
		if err != nil || c.Write(r.Context(), typ, msg) != nil {
			return
		}
	}
}

func wsUser(t *testing.T, target, steps string) (*ConnUser, *plan.Env, *stepLog) {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte(`
target: `+target+`
scenarios:
  w:
    users: 1
    websocket:
      url: /ws
      steps:
`+steps+`
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := p.Scenarios[0].Connection.Spec()
	log := &stepLog{}
	return NewConnUser(p, target, spec, log), prog.ConnectionEnv(0, 1, 0, spec.WebSocket.Captures), log
}

// A connection's user runs its script up to a hold, then on from there
// to its close, capturing a big id exactly as the server wrote it and
// sending it back; every step is recorded under its own name.
func TestConnUserRunsItsScriptInParts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	u, env, log := wsUser(t, srv.URL, `
        - send: '{"id": 1234567890123456789, "n": 1.50}'
        - name: got
          wait: {json: n, equals: "1.50", timeout: 2s, capture: {id: {json: id}}}
        - hold: 1s
        - send: "id {{ id }}"
        - wait: {regex: "^id 1234567890123456789$", timeout: 2s}
        - close: {code: 4000, reason: bye}`)
	ctx := context.Background()
	c, err := u.DialWS(ctx, &ws.Options{}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(1000, "")
	pc := 0
	if end := u.RunScript(ctx, c, &pc, env); end.Stop != ScriptHold || end.Hold != time.Second || pc != 3 {
		t.Fatalf("first part ended %+v at step %d", end, pc)
	}
	if env.Captures[0] != "1234567890123456789" {
		t.Errorf("captured %q", env.Captures[0])
	}
	if end := u.RunScript(ctx, c, &pc, env); end.Stop != ScriptClose || end.Code != 4000 || end.Reason != "bye" || pc != 6 {
		t.Fatalf("second part ended %+v at step %d", end, pc)
	}
	want := []string{"upgrade ok", "send 1 ok", "got ok", "send 4 ok", "wait 5 ok"}
	if len(log.rows) != len(want) {
		t.Fatalf("recorded %q, want %q", log.rows, want)
	}
	for i := range want {
		if log.rows[i] != want[i] {
			t.Errorf("record %d = %q, want %q", i, log.rows[i], want[i])
		}
	}
}

// A wait whose capture finds nothing fails the script as a capture
// failure, in the words an HTTP step's capture fails with, and a new
// connection forgets the last one's captures.
func TestConnUserCaptureFailsAsAnHTTPStepDoes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	u, env, log := wsUser(t, srv.URL, `
        - send: '{"a": 1}'
        - wait: {json: a, equals: "1", timeout: 2s, capture: {token: {json: b}}}`)
	env.Captures[0] = "from the last connection"
	ctx := context.Background()
	c, err := u.DialWS(ctx, &ws.Options{}, env)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(1000, "")
	if env.Captures[0] != "" {
		t.Errorf("a new connection kept capture %q", env.Captures[0])
	}
	pc := 0
	if end := u.RunScript(ctx, c, &pc, env); end.Stop != ScriptFailed || end.Interrupted {
		t.Fatalf("ended %+v", end)
	}
	want := `wait 2 capture: capture "token" found nothing`
	if len(log.rows) != 3 || log.rows[2] != want {
		t.Fatalf("recorded %q, want the last %q", log.rows, want)
	}
}
