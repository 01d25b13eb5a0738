package plan

import (
	"strings"
	"testing"
)

// secret_headers and a capture's secret: are checked at their place, and a
// literal value of a secret header is a secret of the plan (plan.source).
func TestSecretHeadersAndCaptures(t *testing.T) {
	_, err := Parse("p.yaml", []byte(`target: http://127.0.0.1:1
secret_headers: [X-Api-Key, "bad header"]
scenarios:
  s:
    steps:
      - {get: /, capture: {t: {json: t, secret: maybe}}}
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err == nil || !strings.Contains(err.Error(), `p.yaml:2:29: bad secret header "bad header"`) || !strings.Contains(err.Error(), "p.yaml:6:") {
		t.Errorf("err = %v", err)
	}
	p := mustParse(t, `target: http://127.0.0.1:1
secret_headers: [X-Api-Key]
defaults: {headers: {X-Api-Key: literal-key-1, X-Other: shown-value}}
scenarios:
  s:
    steps:
      - {get: /, capture: {t: {json: t, secret: true}, u: {json: u}}}
      - {get: /, headers: {Authorization: "Bearer {{ u }}"}}
load: {stages: [{duration: 1s, users: 1}]}
`, nil)
	if got := p.Redact(string(p.Source)); strings.Contains(got, "literal-key-1") || !strings.Contains(got, "shown-value") || strings.Contains(got, "Bearer "+Redacted) {
		t.Errorf("plan source redacted as:\n%s", got)
	}
	caps := p.Scenarios[0].Steps[0].Captures
	if !caps[0].Secret || !caps[1].Secret {
		t.Errorf("captures %+v: want t (secret: true) and u (feeds Authorization) secret", caps)
	}
}
