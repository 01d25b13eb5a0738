package run

import (
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// A WebSocket capture that finds nothing is worded as an HTTP step's
// (`capture "id" found nothing`, vu.judge), so a plan's failures read
// alike whichever protocol they came over.
func TestWSCaptureFailureReadsAsHTTPs(t *testing.T) {
	if got := (&captureError{name: "id"}).Error(); !strings.HasPrefix(got, `capture "id" found nothing`) {
		t.Errorf("WebSocket capture failure %q", got)
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
	pop := &population{plan: p}
	h := pop.headerOf([]plan.Header{{Name: "Authorization", Value: auth}}, &plan.Env{VU: 7})
	if h.Get("Authorization") != "Bearer hub-token-7" {
		t.Fatalf("header %q", h.Get("Authorization"))
	}
	if got := p.Redact("handshake echo: hub-token-7"); strings.Contains(got, "hub-token-7") {
		t.Errorf("the connection's token shows: %q", got)
	}
}
