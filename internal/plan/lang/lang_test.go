package lang

import (
	"strings"
	"testing"
)

// TestCompileChecksNamesAndEvaluates: a compiled expression reads a
// user's captures, vars and data row; a name the scope lacks is refused at
// compile time with the offset it is at.
func TestCompileChecksNamesAndEvaluates(t *testing.T) {
	used := map[int]bool{}
	sc := &Scope{
		Vars:     map[string]string{"region": "eu"},
		Data:     map[string]Source{"users": {Index: 1, Columns: []string{"name"}}},
		Captures: map[string]int{"token": 0}, CapOrder: []string{"token"},
		DataUsed: used,
	}
	e, msg, _ := Compile(`token + "/" + vars.region + "/" + data.users.name + "/" + string(status)`, sc, false)
	if e == nil {
		t.Fatalf("compile: %s", msg)
	}
	if !used[1] {
		t.Errorf("data source 1 read but not marked used: %v", used)
	}
	var s State
	v := Values{Captures: []string{"abc"}, Rows: [][]string{nil, {"ann"}}, Status: 201}
	if got, err := e.Eval(&s, &v); err != nil || got != "abc/eu/ann/201" {
		t.Errorf("Eval = %v, %v; want abc/eu/ann/201", got, err)
	}
	v.Captures[0], v.Status = "xyz", 404
	if got, _ := e.Eval(&s, &v); got != "xyz/eu/ann/404" {
		t.Errorf("Eval after the capture changed = %v", got)
	}
	for src, want := range map[string]string{
		`vars.regoin == "eu"`: `unknown var "regoin"`,
		`data.users.nmae`:     `has no column "nmae"`,
		`tenant > 1`:          "tenant needs a tenant pool",
		`nope == 1`:           "captures so far: token",
	} {
		if _, msg, off := Compile(src, sc, true); !strings.Contains(msg, want) || off < 0 || off >= len(src) {
			t.Errorf("Compile(%q) = %q at %d, want %q inside the source", src, msg, off, want)
		}
	}
}

// TestLanguageHelpers: what parses as an expression, the words an
// expression owns, and a script's error placed at its line and column.
func TestLanguageHelpers(t *testing.T) {
	if !IsSyntax(`a + 1`) || IsSyntax(`a +`) {
		t.Error("IsSyntax: a + 1 parses, a + does not")
	}
	if !Word("len") || !Word("status") || Word("token") {
		t.Error("Word: len and status are the language's, token is not")
	}
	if p, _, msg := CompileScript("s.js", "(function () {\n  return 1;\n})"); p == nil {
		t.Errorf("a good script failed: %s", msg)
	}
	if p, at, msg := CompileScript("s.js", "(function () {\n  undeclared = 1;\n  return (;\n})"); p != nil || at[0] != 3 || msg == "" {
		t.Errorf("a bad script: program %v, at %v, message %q; want refused at line 3", p, at, msg)
	}
}
