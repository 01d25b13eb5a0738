package jmx

import (
	"strings"
	"testing"
)

// HTTP samplers with the defaults and header managers in scope, their
// parameters as query, form or raw body, and the controllers around them.
func TestSamplers(t *testing.T) {
	out, res := convertFile(t, "samplers.jmx")
	mustContain(t, out,
		// Defaults: protocol, domain, port 443 left out for https.
		"target: https://shop.example.com\n",
		// The test plan's header manager as the plan's defaults, a
		// property as an environment reference with its default.
		"defaults:\n  headers:\n    Accept: application/json\n    X-Env: ${ENV:-stage}\n",
		// GET parameters as query; a user variable inlined; __UUID.
		"get: /search\n        query:\n          q: shoes\n          id: '{{ uuid }}'\n          n: \"7\"\n",
		// A sampler's own header manager replaces a header; a raw body,
		// its "{{" read from a var; an extracted variable in the path.
		"put: /orders/{{ token }}\n        headers:\n          Accept: text/plain\n          Content-Type: application/json\n",
		`body: '{"qty": 1, "t": "{{ vars.stampede_lbrace }}x}}"}'`,
		"stampede_lbrace: '{{'",
		// Another server: the whole URL.
		"delete: https://api.example.com/x\n        redirects: 0\n", // follow_redirects off
		// Once Only at the thread group's top: once; POST parameters as
		// a form; __threadNum; a regex extractor.
		"once:\n      - name: login\n        post: /login\n        form:\n          user: u{{ vu }}\n          pass: secret\n        capture:\n          token: {regex: token=(\\w+)}\n",
		// Transaction → group, loop → repeat, __Random → rand_int.
		"- name: cart\n        group: Checkout\n        get: /cart\n",
		"- repeat: 3\n        steps:\n          - name: item\n            group: Checkout\n            get: /items/{{ rand_int(1, 40) }}\n",
		// If with a comparison the plan reads; random → choose.
		"- if: token == \"ok\"\n        steps:\n          - name: guarded\n",
		"- choose:\n          - steps:\n              - name: a\n",
		// Properties in the load.
		"- {duration: 5s, users: '0 -> ${THREADS:-5}'}\n    - {duration: 25s, users: '${THREADS:-5}'}\n",
	)
	skipped := strings.Join(res.Skipped, "\n")
	for _, want := range []string{
		`TestPlan/HeaderManager "Plan headers": header Host (the client sets it)`,
		`TestPlan/ThreadGroup "Users"/HTTPSamplerProxy "options": method OPTIONS`,
		`TestPlan/ThreadGroup "Users"/IfController "Scripted": condition`,
		`TestPlan/ThreadGroup "Users"/WhileController "Poll": no while loop in a plan: its steps run once`,
		`TestPlan/ThreadGroup "Users"/JSR223Sampler "Script": not converted`,
	} {
		if !strings.Contains(skipped, want) {
			t.Errorf("not listed as not converted: %s\nlisted:\n%s", want, skipped)
		}
		if !strings.Contains(out, "#   "+want) {
			t.Errorf("not in the plan's header comment: %s", want)
		}
	}
	if len(res.Skipped) != 5 || res.Samplers != 12 || res.Steps != 11 {
		t.Errorf("skipped %d, samplers %d, steps %d; want 5, 12, 11:\n%s", len(res.Skipped), res.Samplers, res.Steps, skipped)
	}
	mustContain(t, strings.Join(res.Env, " "), "DURATION=30", "ENV=stage", "THREADS=5")
}
