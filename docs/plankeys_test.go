package docs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// unknownKey is a key no section accepts and nothing is suggested for, so
// the parser answers with the section's full list of keys.
const unknownKey = "zzqx"

// A keyProbe puts unknownKey into one section of an otherwise small plan.
// The parser's "expected one of ..." answer is that section's key list:
// the reference is read from the parser itself, not copied from it.
type keyProbe struct {
	path string // where the section sits in a plan
	what string // the parser's own name for the section, as its errors say it
	yaml string // a plan with ZZ where the unknown key goes
}

const probeHead = "name: p\ntarget: http://127.0.0.1:1\n"

func stepsPlan(step string) string {
	return probeHead + "scenarios:\n  s:\n    steps:\n" + step + "load:\n  stages: [{duration: 1s, users: 1}]\n"
}

func connPlan(section string) string {
	return probeHead + "scenarios:\n  c:\n    users: 1\n" + section + "load:\n  stages: [{duration: 1s, users: 1}]\n"
}

var keyProbes = []keyProbe{
	{"(top level)", "the plan", stepsPlan("      - get: /\n") + "ZZ: 1\n"},
	{"defaults", "defaults", stepsPlan("      - get: /\n") + "defaults: {ZZ: 1}\n"},
	{"tls", "tls", stepsPlan("      - get: /\n") + "tls: {ZZ: 1}\n"},
	{"http", "http", stepsPlan("      - get: /\n") + "http: {ZZ: 1}\n"},
	{"data.NAME", "data", stepsPlan("      - get: /\n") + "data:\n  d: {file: d.csv, ZZ: 1}\n"},
	{"tenants", "tenants", stepsPlan("      - get: /\n") + "tenants: {count: 2, ZZ: 1}\n"},
	{"tenants.waves[]", "wave", stepsPlan("      - get: /\n") + "tenants: {count: 2, waves: [{share: 1, offset: 0s, ZZ: 1}]}\n"},
	{"scenarios.NAME", "scenario", probeHead + "scenarios:\n  s:\n    ZZ: 1\n    steps: [{get: /}]\nload:\n  stages: [{duration: 1s, users: 1}]\n"},
	{"scenarios.NAME.steps[] (request step)", "step", stepsPlan("      - {get: /, ZZ: 1}\n")},
	{"steps[].capture.NAME", "capture", stepsPlan("      - {get: /, capture: {c: {json: a, ZZ: 1}}}\n")},
	{"steps[].expect", "expect", stepsPlan("      - {get: /, expect: {ZZ: 1}}\n")},
	{"steps[].multipart.FIELD", "multipart", stepsPlan("      - {post: /, multipart: {f: {value: v, ZZ: 1}}}\n")},
	{"steps[] (think step)", "think step", stepsPlan("      - get: /\n      - {think: 1s, ZZ: 1}\n")},
	{"steps[].think / load.pace (distribution)", "distribution", stepsPlan("      - get: /\n      - {think: {exponential: 1s, ZZ: 1}}\n")},
	{"steps[] (script step)", "script step", stepsPlan("      - get: /\n      - {script: 'x = 1', ZZ: 1}\n")},
	{"steps[] (control step)", "control step", stepsPlan("      - {repeat: 2, steps: [{get: /}], ZZ: 1}\n")},
	{"steps[].choose[]", "choose branch", stepsPlan("      - choose: [{weight: 1, steps: [{get: /}], ZZ: 1}]\n")},
	{"load", "load", probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  ZZ: 1\n  stages: [{duration: 1s, users: 1}]\n"},
	{"load.stages[]", "stage", probeHead + "scenarios:\n  s: {steps: [{get: /}]}\nload:\n  stages: [{duration: 1s, users: 1, ZZ: 1}]\n"},
	{"gates", "gates", stepsPlan("      - get: /\n") + "gates: {vary: users, levels: [1], hold: 1s, ZZ: 1}\n"},
	{"monitors[]", "monitor", stepsPlan("      - get: /\n") + "monitors:\n  - {host: local, ZZ: 1}\n"},
	{"scenarios.NAME.signalr", "signalr section", connPlan("    signalr: {url: /hub, ZZ: 1}\n")},
	{"signalr.invoke[]", "hub call", connPlan("    signalr: {url: /hub, invoke: [{method: M, ZZ: 1}]}\n")},
	{"scenarios.NAME.websocket", "websocket section", connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{hold: 1s}], ZZ: 1}\n")},
	{"websocket.steps[]", "websocket step", connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{hold: 1s, ZZ: 1}]}\n")},
	{"websocket.steps[].send", "send", connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{send: {text: t, ZZ: 1}}]}\n")},
	{"websocket.steps[].wait", "wait", connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{send: t}, {wait: {regex: x, ZZ: 1}}]}\n")},
	{"websocket.steps[].close", "close", connPlan("    websocket: {url: ws://127.0.0.1:1/, steps: [{close: {code: 1000, ZZ: 1}}]}\n")},
}

var expectedKeysRE = regexp.MustCompile(`unknown key "` + unknownKey + `" in ([^:]+): expected one of ([^\n]+)`)

// sectionKeys parses the probe's plan and returns the keys the parser
// says its section accepts.
func sectionKeys(t *testing.T, pr keyProbe) []string {
	t.Helper()
	src := strings.Replace(pr.yaml, "ZZ", unknownKey, 1)
	_, err := plan.Parse("probe.yaml", []byte(src), func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatalf("%s: the parser accepted the unknown key %q", pr.path, unknownKey)
	}
	for _, m := range expectedKeysRE.FindAllStringSubmatch(err.Error(), -1) {
		if strings.Contains(m[1], pr.what) {
			return strings.Split(m[2], ", ")
		}
	}
	t.Fatalf("%s: the parser did not list the keys of %q; it said:\n%v", pr.path, pr.what, err)
	return nil
}

// planKeyDocs is each key's description as the plan's JSON Schema gives
// it (internal/plan/schemadocs.go is the one copy): the Markdown text
// where it has links, else the plain one.
func planKeyDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for path, props := range schemaSections(t) {
		for key, v := range props {
			p, _ := v.(map[string]any)
			d, ok := p["markdownDescription"].(string)
			if !ok {
				d, ok = p["description"].(string)
			}
			if ok {
				docs[path+" "+key] = d
			}
		}
	}
	return docs
}

func planKeysTable(t *testing.T) string {
	var b strings.Builder
	described := map[string]bool{}
	planKeyDocs := planKeyDocs(t)
	for _, pr := range keyProbes {
		fmt.Fprintf(&b, "\n### `%s`\n\n| key | what it is |\n|---|---|\n", pr.path)
		for _, key := range sectionKeys(t, pr) {
			id := pr.path + " " + key
			desc, ok := planKeyDocs[id]
			if !ok {
				t.Errorf("plan key %q of %s has no description: add %q to keyDocs in internal/plan/schemadocs.go", key, pr.path, id)
			}
			described[id] = true
			fmt.Fprintf(&b, "| `%s` | %s |\n", key, desc)
		}
	}
	for id := range planKeyDocs {
		if !described[id] {
			t.Errorf("the schema describes %q, which the parser no longer accepts", id)
		}
	}
	return b.String()
}

func TestReferencePlanKeys(t *testing.T) {
	checkGenerated(t, "reference/plan-keys.md", "plan keys", planKeysTable(t))
}
