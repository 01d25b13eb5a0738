package plan

import (
	"strings"
	"testing"
)

// TestScriptStep pins what a script step compiles to: its slots (sets
// share the capture slots templates use), whether it follows a request,
// and the request before it keeping its body for response.body.
func TestScriptStep(t *testing.T) {
	src := `target: demo
scenarios:
  s:
    steps:
      - sets: [early]
        script: "set('early', 'x')"
      - get: /a
        capture: {tok: {json: t}}
      - think: 1s
      - name: sign
        sets: [sig, tok]
        script: |
          set("sig", sha256(response.body + captures.tok));
      - get: /b/{{ sig }}/{{ early }}
      - script: "if (captures.sig === '') fail('no sig')"
load: {stages: [{duration: 1s, users: 1}]}
`
	p, err := Parse("s.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Scenarios[0]
	steps := sc.Steps
	first, sign, last := steps[0].Script, steps[3].Script, steps[5].Script
	if first.AfterRequest || !sign.AfterRequest || !last.AfterRequest {
		t.Errorf("AfterRequest: %v %v %v, want false true true", first.AfterRequest, sign.AfterRequest, last.AfterRequest)
	}
	if !steps[1].KeepBody || steps[4].KeepBody {
		t.Errorf("KeepBody: GET /a %v (its answer is read as response.body), GET /b %v (a script after it reads no response)", steps[1].KeepBody, steps[4].KeepBody)
	}
	if want := []string{"early", "tok", "sig"}; strings.Join(sc.CaptureNames, ",") != strings.Join(want, ",") {
		t.Errorf("capture names %v, want %v", sc.CaptureNames, want)
	}
	if sign.Sets["tok"] != 1 || sign.Sets["sig"] != 2 || sign.Captures["early"] != 0 || len(first.Captures) != 1 {
		t.Errorf("slots: sets %v, captures %v, first script's captures %v", sign.Sets, sign.Captures, first.Captures)
	}
	if steps[3].Name != "sign" || steps[5].Name != "script (line 15)" {
		t.Errorf("names %q and %q", steps[3].Name, steps[5].Name)
	}
	// Positions: a quoted one-line script maps columns inside the quotes,
	// a block scalar its lines and indentation.
	if got := last.At(1, 5).String(); got != "s.yaml:15:22" {
		t.Errorf("quoted script 1:5 at %s, want s.yaml:15:22", got)
	}
	if got := sign.At(1, 5).String(); got != "s.yaml:13:15" {
		t.Errorf("block script 1:5 at %s, want s.yaml:13:15", got)
	}
}

// TestScriptFuzzSeedsLoad: the script seeds of FuzzParseBodiesThink load,
// so fuzzing starts from valid plans.
func TestScriptFuzzSeedsLoad(t *testing.T) {
	for _, s := range []string{
		"{get: /}, {script: 'set(\"a\", response.body)', sets: [a]}, {get: '/{{ a }}'}",
		"{get: /}, {name: s, script: \"const x = `${captures.a}`;\\nfail(x)\"}",
	} {
		src := "target: demo\nscenarios: {s: {steps: [" + s + "]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
		if _, err := parse("f.yaml", []byte(src), fixtureEnv, bodyFiles); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
}
