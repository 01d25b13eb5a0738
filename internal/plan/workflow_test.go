package plan

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWorkflowLayout(t *testing.T) {
	p, err := parseFile(t, "testdata/good/workflows.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Setup == nil || p.Teardown == nil || len(p.Setup.CaptureNames) != 1 || p.Setup.CaptureNames[0] != "fixture" {
		t.Fatalf("setup %+v, teardown %+v", p.Setup, p.Teardown)
	}
	s := p.Scenarios[0]
	if s.Steps[0].Kind != StepOnce || s.Steps[s.Flow.OnceEnd-1].Kind != StepOnceEnd || s.Steps[0].Flow.Jump != s.Flow.OnceEnd {
		t.Fatalf("once block not laid out: OnceEnd %d", s.Flow.OnceEnd)
	}
	if len(s.Flow.RenewOn) != 2 || s.Flow.Loops != 2 {
		t.Fatalf("flow %+v", s.Flow)
	}
	// Every jump lands inside the scenario or just past its end, and
	// every control step has its flow.
	for i, st := range s.Steps {
		if st.Kind < StepIf {
			continue
		}
		if st.Kind == StepOnceEnd {
			continue
		}
		if st.Flow == nil {
			t.Fatalf("step %d (%d) has no flow", i, st.Kind)
		}
		if st.Kind != StepChoose && st.Kind != StepLoop && (st.Flow.Jump <= 0 || st.Flow.Jump > len(s.Steps)) {
			t.Errorf("step %d (%d) jumps to %d of %d", i, st.Kind, st.Flow.Jump, len(s.Steps))
		}
	}
	// The teardown reads the setup's capture as a global.
	del := p.Teardown.Steps[0]
	if del.URL.Parts[1].Kind != PartGlobal {
		t.Fatalf("teardown URL parts %+v", del.URL.Parts)
	}
	env := &Env{Globals: []string{"f7"}}
	if got := del.URL.String(env); got != "/auth/fixtures/f7" {
		t.Fatalf("teardown URL %q", got)
	}
}

// The functions plans call give the values a server checks.
func TestExprFunctions(t *testing.T) {
	sc := &scope{vars: map[string]string{"key": "k"}, captures: map[string]int{"doc": 0}, capOrder: []string{"doc"}}
	env := &Env{Captures: []string{`{"a":{"b":[1,"x"]}}`}, Body: []byte("hello")}
	for src, want := range map[string]string{
		`sha256("abc")`:          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		`base64("hi?")`:          "aGk/",
		`url_encode("a b&c")`:    "a+b%26c",
		`json(doc, "a.b.1")`:     "x",
		`json(doc, "a.b.0") + 1`: "2",
		`len(uuid())`:            "36",
		`choice(["z"])`:          "z",
		`now().Unix() > 0`:       "true",
	} {
		e, msg, _ := compileExpr(src, sc, false)
		if msg != "" {
			t.Errorf("%s: %s", src, msg)
			continue
		}
		v, err := e.Eval(env)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := string(AppendValue(nil, v)); got != want {
			t.Errorf("%s = %q, want %q", src, got, want)
		}
	}
	// HMAC checked against the standard library's answer for the same
	// input, computed independently of the function under test.
	e, _, _ := compileExpr(`hmac_sha256("key", "The quick brown fox jumps over the lazy dog")`, sc, false)
	v, _ := e.Eval(env)
	if v != "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8" {
		t.Errorf("hmac_sha256 = %v", v)
	}
}

// Unknown names are refused at load, with what is available.
func TestExprUnknownNames(t *testing.T) {
	sc := &scope{vars: map[string]string{"key": "k"}, captures: map[string]int{"tok": 0}, capOrder: []string{"tok"}}
	for src, want := range map[string]string{
		`nope == 1`:        `unknown name nope`,
		`vars.nokey`:       `unknown var "nokey": the plan defines key`,
		`data.x.y`:         `unknown data source "x"`,
		`sha256(1)`:        `cannot use int as argument`,
		`hmac_sha256("a")`: `not enough arguments`,
		`tenant == 1`:      `tenant needs a tenant pool`,
		`system("rm -rf")`: `unknown name system`,
	} {
		_, msg, _ := compileExpr(src, sc, false)
		if !strings.Contains(msg, want) {
			t.Errorf("%s: %q, want it to contain %q", src, msg, want)
		}
	}
}

// FuzzParseWorkflows runs plans with workflow keys through the parser and
// walks every compiled step the way the engine does: jumps stay inside the
// scenario, conditions evaluate without panicking.
func FuzzParseWorkflows(f *testing.F) {
	for _, s := range []string{
		"{get: /, if: 'status == 200'}",
		"{if: 'vu > 1', steps: [{get: /a}], else: [{get: /b}]}",
		"{repeat: 3, steps: [{get: /}, {think: 1ms}]}",
		"{get: /, capture: {ids: {json: ids}}}, {for_each: ids, as: id, steps: [{get: '/{{ id }}'}]}",
		"{for_each: '[1, 2, 3]', steps: [{get: '/{{ item }}'}]}",
		"{choose: [{weight: 2, steps: [{get: /a}]}, {steps: [{get: /b}]}]}",
		"{get: '/{{ hmac_sha256(\"k\", body) }}{{ sha256(\"x\") }}'}",
		"{repeat: 2, steps: [{choose: [{steps: [{if: 'iter > 0', steps: [{get: /}]}]}]}]}",
		"{get: /, capture: {g: {json: id}}}", // hides the setup's g: refused
	} {
		f.Add("target: demo\nsetup: [{post: /s, capture: {g: {json: id}}}]\nscenarios: {s: {once: [{post: /l, capture: {t: {json: t}}}], renew_on: 401, steps: [" + s + "]}}\nteardown: [{delete: '/s/{{ g }}'}]\nload: {stages: [{duration: 1s, users: 1}]}\n")
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := parse("fuzz.yaml", []byte(src), fixtureEnv, noFiles)
		if (p == nil) == (err == nil) {
			t.Fatalf("want exactly one of plan and error, got %v and %v", p, err)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		scs := append([]*Scenario{}, p.Scenarios...)
		if p.Setup != nil {
			scs = append(scs, p.Setup)
		}
		if p.Teardown != nil {
			scs = append(scs, p.Teardown)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, s := range scs {
			env := &Env{Captures: make([]string, s.Captures), Rows: make([][]string, len(p.Data)), Rand: r, Status: 200}
			for _, st := range s.Steps {
				st.URL.String(env)
				if st.Kind < StepIf {
					continue
				}
				fl := st.Flow
				if fl.Jump < 0 || fl.Jump > len(s.Steps) {
					t.Fatalf("jump to %d of %d steps", fl.Jump, len(s.Steps))
				}
				for _, b := range fl.Branches {
					if b < 0 || b > len(s.Steps) {
						t.Fatalf("branch at %d of %d steps", b, len(s.Steps))
					}
				}
				if fl.Cond != nil {
					fl.Cond.Eval(env)
				}
			}
		}
	})
}
