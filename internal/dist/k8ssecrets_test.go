package dist

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// A plan with a credential in its text is refused for a cluster run, at
// the credential's place: the ConfigMap carried the target's password
// verbatim. The same plan with ${NAME} references makes a manifest that
// holds no credential.
func TestConfigMapHoldsNoCredential(t *testing.T) {
	start := time.Now().Add(time.Minute)
	for _, c := range []struct{ src, at string }{
		{"target: http://ann:plainpass@127.0.0.1:1\n", "p.yaml:2:16"},
		{"target: http://127.0.0.1:1\ndefaults: {headers: {Authorization: Bearer plaintoken1}}\n", "p.yaml:3:"},
		{"target: http://127.0.0.1:1\nsecret_headers: [X-Api-Key]\ndefaults: {headers: {X-Api-Key: plainkey99}}\n", "p.yaml:4:"},
	} {
		dir := t.TempDir()
		pf := filepath.Join(dir, "p.yaml")
		os.WriteFile(pf, []byte("name: x\n"+c.src+"scenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"), 0o644)
		p, err := plan.LoadFileWith(pf, plan.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = BuildManifest(p, K8s{Segments: 2, StartAt: start, PlanFile: pf})
		if err == nil || !strings.Contains(err.Error(), c.at) || !strings.Contains(err.Error(), "--env-from-secret") {
			t.Errorf("%q: err = %v, want it refused at %s", c.src, err, c.at)
		}
	}
	dir := t.TempDir()
	pf := filepath.Join(dir, "p.yaml")
	os.WriteFile(pf, []byte("name: x\ntarget: http://ann:${PASS}@127.0.0.1:1\ndefaults: {headers: {X-Token: \"${TOKEN}\"}}\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"), 0o644)
	env := map[string]string{"PASS": "envpass123", "TOKEN": "envtoken456"}
	p, err := plan.Parse(pf, mustReadFile(t, pf), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildManifest(p, K8s{Segments: 2, StartAt: start, PlanFile: pf})
	if err != nil {
		t.Fatal(err)
	}
	text := m.ConfigMap.Data["plan.yaml"]
	if strings.Contains(text, "envpass123") || strings.Contains(text, "envtoken456") || !strings.Contains(text, "${PASS}") {
		t.Errorf("ConfigMap plan:\n%s", text)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
