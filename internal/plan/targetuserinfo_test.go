package plan

import (
	"encoding/base64"
	"strings"
	"testing"
)

// A secret read from the environment into the target's user:password@
// was pasted in as URL text: a Twilio-style token with / or # in it made
// the target fail to load, with the token quoted in full in the error,
// and one holding %20 was sent as a space. Each is now the password it
// names.
func TestTargetUserinfoFromEnvIsEscaped(t *testing.T) {
	for _, token := range []string{"longsecret/with+slash=", "p%20q", "a#b?c@d", "plain"} {
		p, err := Parse("p.yaml", []byte(`target: http://${SID}:${TOKEN}@127.0.0.1:8080
scenarios: {s: {steps: [{get: /a}]}}
load: {stages: [{duration: 1s, users: 1}]}
`), func(k string) (string, bool) { return map[string]string{"SID": "AC1", "TOKEN": token}[k], true })
		if err != nil {
			if strings.Contains(err.Error(), token) {
				t.Errorf("token %q: the error shows it: %v", token, err)
			}
			t.Errorf("token %q: %v", token, err)
			continue
		}
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("AC1:"+token))
		if got := header(p.Scenarios[0].Steps[0].Headers, "Authorization"); got != want {
			t.Errorf("token %q: Authorization = %q, want %q", token, got, want)
		}
		if p.Target != "http://127.0.0.1:8080" {
			t.Errorf("token %q: target %q", token, p.Target)
		}
	}
}

// The host part of the target may come from the environment too: it is
// not escaped, and an unset variable in the userinfo is reported where it
// stands.
func TestTargetHostFromEnvIsNotEscaped(t *testing.T) {
	p := mustParse(t, "target: http://u:${P}@${HOST}/api\nscenarios: {s: {steps: [{get: /a}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n",
		map[string]string{"P": "x/y", "HOST": "127.0.0.1:9000"})
	if p.Target != "http://127.0.0.1:9000/api" {
		t.Errorf("target %q", p.Target)
	}
	_, err := Parse("p.yaml", []byte("target: http://u:${MISSING}@h.test\n"), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "p.yaml:1:18") || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("err = %v", err)
	}
}

// A bad target's message never shows the password, whatever it holds.
func TestBadTargetHidesPasswordWithSlash(t *testing.T) {
	_, err := Parse("p.yaml", []byte("target: http://ACxxxx1234:longsecret/with+slash=@h.test/?q=1\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "bad target") || strings.Contains(err.Error(), "longsecret") {
		t.Errorf("err = %v", err)
	}
}
