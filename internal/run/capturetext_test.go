package run

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// A WebSocket capture marked secret is hidden from every message once
// taken, as a request step's is: the connection path used to take its
// captures on its own and never noted one.
func TestWSSecretCaptureIsHidden(t *testing.T) {
	srv := httptest.NewServer(&wsServer{})
	defer srv.Close()
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  ticker:
    users: 1
    websocket:
      url: "/feed?u=oken-{{ vu }}"
      steps:
        - send: {json: {op: join, room: r}}
        - name: joined
          wait: {json: type, equals: joined, timeout: 2s, capture: {id: {json: id, secret: true}}}
        - hold: 100ms
load: {stages: [{duration: 300ms, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := connStep(t, res, "ticker", "joined"); s.Successful == 0 {
		t.Fatalf("the capture never ran: %+v", s)
	}
	if got := p.Redact("echoed: token-1"); strings.Contains(got, "token-1") {
		t.Errorf("the secret capture shows: %q", got)
	}
}

// A connection's credential headers are noted as they are rendered, so a
// hub that echoes its handshake hides them as a request step's are.
func TestConnectionHeadersAreNoted(t *testing.T) {
	p, err := plan.Parse("p.yaml", []byte(`target: http://127.0.0.1:1
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := &plan.Template{Source: "Bearer hub-token-{{ vu }}", Parts: []plan.Part{{Kind: plan.PartLiteral, Literal: "Bearer hub-token-"}, {Kind: plan.PartVU}}}
	h := vu.ConnectionHeaders(p, []plan.Header{{Name: "Authorization", Value: auth}}, &plan.Env{VU: 7})
	if h.Get("Authorization") != "Bearer hub-token-7" {
		t.Fatalf("header %q", h.Get("Authorization"))
	}
	if got := p.Redact("handshake echo: hub-token-7"); strings.Contains(got, "hub-token-7") {
		t.Errorf("the connection's token shows: %q", got)
	}
}
