package plan

import (
	"strings"
	"testing"
)

// A plan error quoting a value that came from the environment shows the
// ${NAME} reference instead: the value itself was printed before
// (bad duration "ENVSECRET-key456"), also when clipped to 40 characters.
func TestPlanErrorsShowEnvReferencesNotValues(t *testing.T) {
	long := "ENVSECRET-" + strings.Repeat("0123456789", 6)
	env := map[string]string{"API_KEY": "ENVSECRET-key456", "LONG": long, "USERS": "many-users"}
	_, err := Parse("p.yaml", []byte(`target: http://127.0.0.1:1
defaults: {timeout: "${API_KEY}"}
scenarios:
  s:
    steps:
      - {get: /a, timeout: "x${LONG}"}
load: {stages: [{duration: 1s, users: "${USERS}"}]}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err == nil {
		t.Fatal("the plan was accepted")
	}
	msg := err.Error()
	for _, secret := range []string{"ENVSECRET", "many-users"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the error quotes an environment value (%s):\n%s", secret, msg)
		}
	}
	for _, ref := range []string{"${API_KEY}", "${LONG}", "${USERS}"} {
		if !strings.Contains(msg, ref) {
			t.Errorf("the error does not name %s:\n%s", ref, msg)
		}
	}
}
