package plan

import (
	"errors"
	"strings"
	"testing"
)

// FuzzScriptErrorPositions: whatever the script and however it is quoted
// or folded, a script error points inside the plan's text (a line that
// exists, a column at most one past its end), never past the file.
func FuzzScriptErrorPositions(f *testing.F) {
	for _, s := range []string{
		"script: |\n          if (x) {\n            set(\"a\", 1);\n",
		"script: \"return 1 +\"\n",
		"script: 'return ''a'' +'\n",
		"script: return 1 +\n",
		"script: \"const a = 1;\n          let b = (a +;\"\n",
		"script: \"a\\\n          b +\"\n",
		"script: const a = 1;\n\n          let b = (a +;\n",
		"script: >\n          const a = 1;\n          let b = (a +;\n",
		"script: >-\n\n          x(\n",
		"script: \"\\u00e9\\t(\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, step string) {
		src := "target: demo\nscenarios:\n  s:\n    steps:\n      - get: /\n      - " + step + "load: {stages: [{duration: 1s, users: 1}]}\n"
		_, err := parse("fuzz.yaml", []byte(src), fixtureEnv, noFiles)
		var pe *Error
		if !errors.As(err, &pe) {
			return
		}
		lines := strings.Split(src, "\n")
		for _, p := range pe.Problems {
			if !strings.HasPrefix(p.Msg, "script: ") {
				continue
			}
			if p.Pos.Line < 1 || p.Pos.Line > len(lines) {
				t.Fatalf("%s: line %d of a %d-line plan:\n%s", p, p.Pos.Line, len(lines), src)
			}
			if l := lines[p.Pos.Line-1]; p.Pos.Col < 1 || p.Pos.Col > len(l)+1 {
				t.Fatalf("%s: column %d of a line of %d bytes:\n%s", p, p.Pos.Col, len(l), src)
			}
		}
	})
}

// The places of script errors in quoted, plain and folded scripts, whose
// lines YAML joined, and of a script that ends too soon.
func TestScriptErrorPositions(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"script: |\n          if (x) {\n            set(\"a\", 1);\n", "8:25: script: unexpected end of the script"},
		{"script: \"return 1 +\"\n", "6:28: script: unexpected end"},
		{"script: \"const a = 1;\n          let b = (a +;\"\n", "7:23: script: Unexpected token ;"},
		{"script: const a = 1;\n\n          let b = (a +;\n", "8:23: script: Unexpected token ;"},
		{"script: >\n          const a = 1;\n          let b = (a +;\n", "8:23: script: Unexpected token ;"},
		{"script: 'a = ''x'' +;'\n", "6:29: script: Unexpected token ;"},
		{"script: \"a = \\\"x\\\" +;\"\n", "6:29: script: Unexpected token ;"},
	} {
		src := "target: demo\nscenarios:\n  s:\n    steps:\n      - get: /\n      - " + tc.step + "load: {stages: [{duration: 1s, users: 1}]}\n"
		_, err := parse("p.yaml", []byte(src), fixtureEnv, noFiles)
		if err == nil || !strings.Contains(err.Error(), "p.yaml:"+tc.want) {
			t.Errorf("%q: got %v, want p.yaml:%s", tc.step, err, tc.want)
		}
	}
}
