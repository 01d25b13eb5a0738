package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// fixedRand makes uuid and rand_int output predictable.
type fixedRand struct{}

func (fixedRand) Int64N(n int64) int64 { return n - 1 }
func (fixedRand) Uint64() uint64       { return 0x0123456789abcdef }

func testScope() *scope {
	return &scope{
		vars: map[string]string{"sp": "a b/c&d\"é", "n": "42"},
		data: map[string]*DataSource{
			"users": {Name: "users", Index: 1, Columns: []string{"id", "name"}},
		},
		tenants:  true,
		captures: map[string]int{"tok": 0, "x-y": 1},
		capOrder: []string{"tok", "x-y"},
		dataUsed: map[int]bool{},
	}
}

func compileTest(src string, m tmplMode) (*Template, string) {
	var b builder
	msg, _ := compileInto(&b, src, m, testScope())
	return b.template(src), msg
}

func TestTemplateRender(t *testing.T) {
	env := &Env{
		Captures: []string{"a b/c?d&e=f\"g\\h\n\x01é\xff", "z"},
		Rows:     [][]string{nil, {"7", "Ann O'Neil"}},
		Tenant:   12, VU: 3, Iter: 9,
		Rand: fixedRand{},
	}
	tests := []struct {
		name, src string
		mode      tmplMode
		want      string
	}{
		// Plain text with spaces inside and without spaces around the braces.
		{"refs", "{{vu}}-{{ iter }}-{{  tenant  }}", modeRaw, "3-9-12"},
		// Raw places get the value untouched.
		{"raw capture", "{{ tok }}", modeRaw, "a b/c?d&e=f\"g\\h\n\x01é\xff"},
		// JSON: quotes, backslashes and controls escaped, invalid UTF-8 replaced.
		{"json capture", "{{ tok }}", modeJSON, `a b/c?d&e=f\"g\\h\n\u0001é\ufffd`},
		// JSON literal text is escaped at compile time.
		{"json literal", `say "{{ x-y }}"`, modeJSON, `say \"z\"`},
		// Form and query values: QueryEscape semantics for refs and text.
		{"query", "a b={{ tok }}", modeQuery, "a+b%3D" + url.QueryEscape(env.Captures[0])},
		// URL paths: PathEscape for refs, literal text as written.
		{"url path", "/p q/{{ tok }}", modeURL, "/p q/" + url.PathEscape(env.Captures[0])},
		// After a ? references land in the query, so QueryEscape.
		{"url query", "/p/{{ x-y }}?q={{ tok }}", modeURL, "/p/z?q=" + url.QueryEscape(env.Captures[0])},
		// Data by source index and column index.
		{"data", "{{ data.users.name }}#{{ data.users.id }}", modeURL, "Ann%20O%27Neil#7"},
		// Vars are resolved (and escaped) at compile time.
		{"var raw", "{{ vars.sp }}", modeRaw, "a b/c&d\"é"},
		{"var json", "{{ vars.sp }}", modeJSON, `a b/c&d\"é`},
		{"var path", "/{{ vars.sp }}", modeURL, "/" + url.PathEscape("a b/c&d\"é")},
		// fixedRand returns the top of the range.
		{"rand", "{{ rand_int(-5, 5) }}|{{rand_int(3,3)}}", modeRaw, "5|3"},
		// Fixed bits give a fixed UUID with version and variant set.
		{"uuid", "{{ uuid }}", modeRaw, "01234567-89ab-4def-8123-456789abcdef"},
		// Lone braces are text.
		{"braces", "{ } }} {x}", modeRaw, "{ } }} {x}"},
	}
	for _, tt := range tests {
		tm, msg := compileTest(tt.src, tt.mode)
		if msg != "" {
			t.Errorf("%s: compile: %s", tt.name, msg)
			continue
		}
		if got := tm.String(env); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTemplateMergesLiterals(t *testing.T) {
	tm, msg := compileTest("a{{ vars.n }}b{{ vars.n }}c", modeRaw)
	if msg != "" || len(tm.Parts) != 1 || tm.Parts[0].Literal != "a42b42c" || !tm.Static() {
		t.Errorf("parts = %+v %s", tm.Parts, msg)
	}
}

func TestTemplateErrors(t *testing.T) {
	tests := []struct {
		name, src, want string
		off             int
	}{
		// Unterminated reference, at the {{.
		{"unterminated", "ab{{ vu", `unterminated template reference "{{ vu": expected "}}" to close "{{"`, 2},
		// An unknown capture lists what exists so far.
		{"capture", "x{{ party }}", `unknown capture "party": no earlier step captures it (captures so far: tok, x-y)`, 1},
		// Unknown vars and data name what exists.
		{"var", "{{ vars.nope }}", `unknown var "nope": the plan defines n, sp`, 0},
		{"source", "{{ data.nope.id }}", `unknown data source "nope": the plan defines users`, 0},
		{"column", "{{ data.users.age }}", `data source "users" has no column "age": its columns are id, name`, 0},
		// rand_int bounds must be ordered integers.
		{"rand order", "{{ rand_int(2, 1) }}", `bad template reference "{{ rand_int(2, 1) }}": expected rand_int(A, B) with whole numbers A <= B`, 0},
		{"rand float", "{{ rand_int(1.5, 2) }}", `bad template reference "{{ rand_int(1.5, 2) }}": expected rand_int(A, B) with whole numbers A <= B`, 0},
		// Anything else is explained.
		{"junk", "{{ a b }}", `bad template reference "{{ a b }}": ` + refHelp, 0},
	}
	for _, tt := range tests {
		var b builder
		msg, off := compileInto(&b, tt.src, modeRaw, testScope())
		if msg != tt.want || off != tt.off {
			t.Errorf("%s: got %q at %d, want %q at %d", tt.name, msg, off, tt.want, tt.off)
		}
	}
}

func TestRandIntBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	env := &Env{Rand: r}
	tests := []struct {
		lo, hi int64
		small  bool // both ends should show up in 2000 draws
	}{
		{1, 6, true},                          // a die
		{-3, -1, true},                        // negative only
		{0, 0, true},                          // a single value
		{math.MinInt64, math.MaxInt64, false}, // the whole range, where Int64N cannot be used
		{-1, math.MaxInt64, false},            // a span just over MaxInt64
	}
	for _, tt := range tests {
		seenLo, seenHi := false, false
		for i := 0; i < 2000; i++ {
			v := randInt(env, tt.lo, tt.hi)
			if v < tt.lo || v > tt.hi {
				t.Fatalf("rand_int(%d, %d) = %d", tt.lo, tt.hi, v)
			}
			seenLo = seenLo || v == tt.lo
			seenHi = seenHi || v == tt.hi
		}
		if tt.small && (!seenLo || !seenHi) {
			t.Errorf("rand_int(%d, %d) never hit an end in 2000 draws", tt.lo, tt.hi)
		}
	}
	// Without a generator the shared one is used.
	if v := randInt(&Env{}, 1, 2); v < 1 || v > 2 {
		t.Errorf("nil Rand: %d", v)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestUUIDFormat(t *testing.T) {
	tm, _ := compileTest("{{ uuid }}", modeRaw)
	env := &Env{Rand: rand.New(rand.NewPCG(3, 4))}
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		u := tm.String(env)
		if !uuidRE.MatchString(u) {
			t.Fatalf("not a v4 UUID: %q", u)
		}
		seen[u] = true
	}
	if len(seen) != 1000 {
		t.Errorf("duplicate UUIDs: %d distinct of 1000", len(seen))
	}
}

// TestEscapesMatchStdlib checks the hand-written escapers byte for byte
// against net/url and encoding/json over random and tricky strings.
func TestEscapesMatchStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	inputs := []string{"", "plain", "a b+c/d?e#f&g=h;i,j:k@l$m~n", "\x00\x1f\x7f\"\\", "é✓\U0001F600", "\xff\xfe", "\u2028"}
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.IntN(12))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		inputs = append(inputs, string(b))
	}
	for _, s := range inputs {
		if got, want := string(appendURLEscaped(nil, s, true)), url.QueryEscape(s); got != want {
			t.Fatalf("query %q: got %q want %q", s, got, want)
		}
		if got, want := string(appendURLEscaped(nil, s, false)), url.PathEscape(s); got != want {
			t.Fatalf("path %q: got %q want %q", s, got, want)
		}
		// The JSON form must decode back to the input (invalid UTF-8 as
		// U+FFFD, as encoding/json does).
		js := `"` + string(appendJSONEscaped(nil, s)) + `"`
		var back string
		if err := json.Unmarshal([]byte(js), &back); err != nil {
			t.Fatalf("json %q: %s does not decode: %v", s, js, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); back != want && utf8.ValidString(s) {
			t.Fatalf("json %q round-trips to %q", s, back)
		}
	}
}

// TestAppendDoesNotAllocate guards the hot path: with a big enough buffer,
// rendering any part kind allocates nothing.
func TestAppendDoesNotAllocate(t *testing.T) {
	tm, msg := compileTest(`/x/{{ tok }}/{{ data.users.id }}?a={{ x-y }}&t={{ tenant }}&v={{ vu }}&i={{ iter }}&u={{ uuid }}&r={{ rand_int(1, 100) }}&n={{ now_ms }}`, modeURL)
	if msg != "" {
		t.Fatal(msg)
	}
	env := &Env{Captures: []string{"a b", "é\""}, Rows: [][]string{nil, {"1", "x"}}, Tenant: 1, VU: 2, Iter: 3, Rand: rand.New(rand.NewPCG(1, 1))}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = tm.Append(buf[:0], env) }); n != 0 {
		t.Errorf("Append allocates %v times per run", n)
	}
}

// TestAppendToleratesShortEnv: an Env with fewer captures or rows than the
// template expects renders empty values rather than panicking.
func TestAppendToleratesShortEnv(t *testing.T) {
	tm, _ := compileTest("[{{ tok }}|{{ data.users.name }}|{{ tenant }}]", modeRaw)
	if got := tm.String(nil); got != "[||0]" {
		t.Errorf("got %q", got)
	}
	if got := (*Template)(nil).String(nil); got != "" {
		t.Errorf("nil template: %q", got)
	}
}

func writeGz(t *testing.T, path, content string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.WriteString(zw, content)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCSVGz(t *testing.T) {
	dir := t.TempDir()
	writeGz(t, filepath.Join(dir, "voters.csv.gz"), "\ufeffvoter_id,district_id\nv1,d1\n\"v,2\",d2\n")
	writeGz(t, filepath.Join(dir, "ragged.CSV.GZ"), "a,b\n1,2\n3\n")
	if err := os.WriteFile(filepath.Join(dir, "bad.csv.gz"), []byte("this is not gzip data"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := func(file string) string {
		return "target: demo\ndata: {v: {file: " + file + "}}\nscenarios: {s: {steps: [{get: /}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"
	}
	planPath := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(planPath, []byte(plan("voters.csv.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadFileWith(planPath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds := p.Data[0]
	// The byte order mark is not part of the first column's name, and
	// quoted fields may hold commas.
	if strings.Join(ds.Columns, "|") != "voter_id|district_id" || len(ds.Rows) != 2 || ds.Rows[1][0] != "v,2" {
		t.Errorf("data = %+v", ds)
	}
	tests := []struct {
		file, want string
	}{
		// The suffix is matched case-insensitively; the line is named.
		{"ragged.CSV.GZ", "data file " + filepath.Join(dir, "ragged.CSV.GZ") + " line 3: found 1 fields, expected 2 as in the header"},
		// Not gzip at all.
		{"bad.csv.gz", "data file " + filepath.Join(dir, "bad.csv.gz") + " is not gzip: gzip: invalid header"},
		// Missing: the resolved path is named.
		{"gone.csv.gz", "data file " + filepath.Join(dir, "gone.csv.gz") + " not found (paths are relative to the plan's directory)"},
	}
	for _, tt := range tests {
		_, err := Parse(planPath, []byte(plan(tt.file)), nil)
		want := planPath + ":2:12: " + tt.want
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tt.file, err, want)
		}
	}
}

// noFiles keeps fuzzing away from the file system: whatever path the fuzzer
// invents, nothing is opened.
func noFiles(string) (io.ReadCloser, error) { return nil, os.ErrNotExist }

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte("a: &a [*a]\nscenarios: {s: {steps: [{post: /, json: *a}]}}"))
	f.Add([]byte("scenarios: {s: {steps: [{post: /, json: &j {a: [*j]}}]}}"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := parse("fuzz.yaml", src, fixtureEnv, noFiles)
		if (p == nil) == (err == nil) {
			t.Fatalf("want exactly one of plan and error, got %v and %v", p, err)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		env := &Env{Captures: make([]string, 8), Rows: make([][]string, len(p.Data)), Rand: rand.New(rand.NewPCG(1, 1))}
		for _, s := range p.Scenarios {
			for _, st := range s.Steps {
				st.URL.String(env)
				st.Body.String(env)
			}
		}
	})
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"", "{{", "}}", "{{ vu }}", "a{{ tok }}b", "{{ rand_int(-9223372036854775808, 9223372036854775807) }}",
		"{{ data.users.id }}", "{{ vars.sp }}?{{ uuid }}", "{{{{}}}}", "{{ rand_int( 1 , 2 ) }}{{ now_ms }}", "\xff{{ x-y }}"} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, src string, mode uint8) {
		var b builder
		msg, off := compileInto(&b, src, tmplMode(mode%4), testScope())
		if msg != "" {
			if off < 0 || off > len(src) {
				t.Fatalf("offset %d outside %q", off, src)
			}
			return
		}
		env := &Env{Captures: []string{"a", "b"}, Rows: [][]string{nil, {"1", "2"}}, Rand: rand.New(rand.NewPCG(1, 1))}
		out := b.template(src).String(env)
		if tmplMode(mode%4) == modeJSON && !json.Valid([]byte(`"`+out+`"`)) {
			t.Fatalf("json mode rendered invalid JSON string content %q", out)
		}
	})
}

// A capture whose name begins with rand_int is referred to by its name,
// as any capture is; only rand_int itself, bare or called, is the
// function. Before, {{ rand_int_x }} was taken for a call and refused.
func TestTemplateNameBeginningWithRandInt(t *testing.T) {
	sc := testScope()
	sc.captures["rand_int_x"] = 2
	sc.capOrder = append(sc.capOrder, "rand_int_x")
	var b builder
	if msg, _ := compileInto(&b, "{{ rand_int_x }}|{{ rand_int (1, 1) }}", modeRaw, sc); msg != "" {
		t.Fatalf("refused: %s", msg)
	}
	env := &Env{Captures: []string{"", "", "seven"}, Rand: fixedRand{}}
	if got := b.template("").String(env); got != "seven|1" {
		t.Errorf("rendered %q, want %q", got, "seven|1")
	}
	var bare builder
	if msg, _ := compileInto(&bare, "{{ rand_int }}", modeRaw, sc); msg == "" {
		t.Error("{{ rand_int }} without bounds was accepted")
	}
}
