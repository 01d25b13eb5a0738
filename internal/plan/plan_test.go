package plan

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the .err golden files of testdata/bad")

// fixtureEnv is the environment every fixture is parsed with, so goldens do
// not depend on the machine running the tests.
func fixtureEnv(name string) (string, bool) {
	v, ok := map[string]string{"API_TOKEN": "s3cret-token", "EMPTY": ""}[name]
	return v, ok
}

func parseFile(t *testing.T, path string) (*Plan, error) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Parse(path, src, fixtureEnv)
}

func TestGoodFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no good fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := parseFile(t, f)
			if err != nil {
				t.Fatalf("want no error, got:\n%v", err)
			}
			if len(p.Scenarios) == 0 || len(p.Load.Stages) == 0 {
				t.Fatalf("plan without scenarios or stages: %+v", p)
			}
		})
	}
}

func TestBadFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) == 0 {
		t.Fatal("no bad fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := parseFile(t, f)
			if err == nil {
				t.Fatal("want an error, got none")
			}
			var pe *Error
			if !errors.As(err, &pe) || len(pe.Problems) == 0 {
				t.Fatalf("want *Error with problems, got %T %v", err, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("error text differs from %s\n--- got:\n%s--- want:\n%s", golden, got, want)
			}
		})
	}
}

// TestScalection pins what the design's example compiles to, field by field,
// since the engine relies on these exact shapes.
func TestScalection(t *testing.T) {
	p, err := parseFile(t, "testdata/good/scalection.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "scalection" || p.Target != "http://127.0.0.1:8080" || p.Tenants != 50 {
		t.Errorf("name/target/tenants = %q %q %d", p.Name, p.Target, p.Tenants)
	}
	if p.Vars["election"] != "2026" {
		t.Errorf("vars = %v", p.Vars)
	}
	if len(p.Data) != 1 || p.Data[0].Pick != PickUnique || !reflect.DeepEqual(p.Data[0].Columns, []string{"voter_id", "district_id"}) || len(p.Data[0].Rows) != 3 {
		t.Errorf("data = %+v", p.Data)
	}
	if p.Data[0].File != filepath.Join("testdata", "good", "voters.csv") {
		t.Errorf("data file not resolved against the plan's directory: %q", p.Data[0].File)
	}
	s := p.Scenarios[0]
	if s.Name != "voter" || s.Weight != 9 || len(s.Steps) != 3 || s.Captures != 1 || !reflect.DeepEqual(s.CaptureNames, []string{"party"}) || !reflect.DeepEqual(s.DataUsed, []int{0}) {
		t.Errorf("scenario = %+v", s)
	}
	get, post, think := s.Steps[0], s.Steps[1], s.Steps[2]
	if get.Name != "GET parties" || get.Method != "GET" || get.URL.String(nil) != "/elections/2026/parties" || get.URL.Source != "/elections/{{ vars.election }}/parties" {
		t.Errorf("get step = %+v url %q", get, get.URL.String(nil))
	}
	if len(get.Captures) != 1 || get.Captures[0].Kind != CaptureJSON || !reflect.DeepEqual(get.Captures[0].JSONPath, []string{"parties", "0", "id"}) {
		t.Errorf("capture = %+v", get.Captures)
	}
	if get.Timeout != 30*time.Second || !reflect.DeepEqual(get.Expect.Status, []StatusMatch{{Code: 200}}) {
		t.Errorf("timeout %v expect %+v", get.Timeout, get.Expect)
	}
	env := &Env{Captures: []string{`p"1`}, Rows: [][]string{{"v-9", "d/3"}}}
	if got := post.Body.String(env); got != `{"partyId":"p\"1"}` || post.ContentType != "application/json" {
		t.Errorf("json body = %s (%s)", got, post.ContentType)
	}
	var hs []string
	for _, h := range post.Headers {
		hs = append(hs, h.Name+"="+h.Value.String(env))
	}
	if want := []string{"Accept=application/json", "voter-id=v-9", "election-district-id=d/3"}; !reflect.DeepEqual(hs, want) {
		t.Errorf("headers = %v, want %v", hs, want)
	}
	if !reflect.DeepEqual(post.Expect.Status, []StatusMatch{{Code: 200}, {Code: 201}}) {
		t.Errorf("status = %+v", post.Expect.Status)
	}
	if think.Kind != StepThink || think.ThinkMin != time.Second || think.ThinkMax != 3*time.Second {
		t.Errorf("think = %+v", think)
	}
	want := Load{Model: Closed, Grace: 5 * time.Second, Stages: []Stage{
		{Duration: 3 * time.Minute, From: 0, To: 400, Steps: 4},
		{Duration: 2 * time.Minute, From: 400, To: 400},
	}}
	if !reflect.DeepEqual(p.Load, want) {
		t.Errorf("load = %+v\nwant %+v", p.Load, want)
	}
	if want := []Pos{{p.File, 32, 7}, {p.File, 33, 7}}; !reflect.DeepEqual(p.stagePos, want) {
		t.Errorf("stage positions = %+v, want %+v", p.stagePos, want)
	}
	if len(p.Thresholds) != 3 || p.Thresholds[2].Value != "POST vote: p99 < 2s" || p.Thresholds[0].Pos.Line != 34 {
		t.Errorf("thresholds = %+v", p.Thresholds)
	}
}

func TestOpenModel(t *testing.T) {
	p, err := parseFile(t, "testdata/good/open_model.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "shop-staging" || p.Target != "https://shop.example.test/api" || !p.TLS.Insecure || p.TLS.ServerName != "shop.local" {
		t.Errorf("plan = %q %q %+v", p.Name, p.Target, p.TLS)
	}
	l := p.Load
	if l.Model != Open || l.MaxInFlight != 500 || l.Grace != 10*time.Second || len(l.Stages) != 3 {
		t.Fatalf("load = %+v", l)
	}
	// Rates are stored per second whichever unit was written, and a unit on
	// one side of a ramp applies to the other.
	for i, w := range [][2]float64{{0, 11000}, {10, 10}, {0, 1.0 / 3600}} {
		if s := l.Stages[i]; s.From != w[0] || s.To != w[1] {
			t.Errorf("stage %d = %v -> %v, want %v", i, s.From, s.To, w)
		}
	}
	browse, buy := p.Scenarios[0], p.Scenarios[1]
	if browse.Name != "browse" || buy.Name != "buy" || buy.Weight != 2 {
		t.Fatalf("scenario order or weight wrong: %s %s %d", browse.Name, buy.Name, buy.Weight)
	}
	env := &Env{Tenant: 3, VU: 7, Iter: 2, Captures: []string{"tok en", "a/b"}}
	g := browse.Steps[0]
	// The target's path (/api) is joined to the step's, as base URLs are.
	if got := g.URL.String(env); got != "/api/products?region=eu+west&t=3" {
		t.Errorf("url = %q", got)
	}
	if g.Group != "reads" || len(g.Query) != 2 || g.Query[1].Name != "sort by" || g.Query[1].Value.String(env) != "price asc" || g.Query[0].Value.String(&Env{Rand: fixedRand{}}) != "5" {
		t.Errorf("query = %+v", g.Query)
	}
	login, put, del := buy.Steps[0], buy.Steps[1], buy.Steps[3]
	if got := login.Body.String(env); got != "user=u7&pass=p%26w%3D2" || login.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("form = %q (%s)", got, login.ContentType)
	}
	// A capture in a path is escaped as a path segment.
	if got := put.URL.String(env); got != "https://cart.example.test/carts/a%2Fb" {
		t.Errorf("put url = %q", got)
	}
	// Content-Type set by a header wins over the json default; the step's
	// accept replaces the default Accept in place.
	if put.ContentType != "" || put.Timeout != 2*time.Second {
		t.Errorf("content type %q timeout %v", put.ContentType, put.Timeout)
	}
	var names []string
	for _, h := range put.Headers {
		names = append(names, h.Name)
	}
	if want := []string{"Authorization", "accept", "X-Auth", "Content-Type"}; !reflect.DeepEqual(names, want) {
		t.Errorf("header names = %v, want %v", names, want)
	}
	if got := put.Headers[0].Value.String(nil); got != "Bearer s3cret-token" {
		t.Errorf("authorization = %q", got)
	}
	body := put.Body.String(&Env{Rand: fixedRand{}})
	if !strings.HasPrefix(body, `{"items":[{"sku":"A-1","qty":2,"price":1.50,"gift":false,"note":null}],"currency":"EUR","id":"`) {
		t.Errorf("json body = %s", body)
	}
	wantJSON := []JSONExpect{{[]string{"ok"}, "true"}, {[]string{"cart", "items", "0", "qty"}, "2"}, {[]string{"cart", "currency"}, "EUR"}}
	if !reflect.DeepEqual(put.Expect.JSON, wantJSON) {
		t.Errorf("expect json = %+v", put.Expect.JSON)
	}
	// Capturing sid again reuses its slot.
	if buy.Captures != 2 || del.Captures[0].Slot != 1 || del.Body.String(env) != "reason=done tok en" {
		t.Errorf("captures = %d %+v", buy.Captures, del.Captures)
	}
}

func TestClosedPace(t *testing.T) {
	p, err := parseFile(t, "testdata/good/closed_pace.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Target != "demo" || p.Load.Pace != time.Second || p.Load.MaxInFlight != 0 || p.Name != "closed_pace" {
		t.Errorf("plan = %+v", p)
	}
	// $${ is the way to send a literal ${ without it being taken from the
	// environment; the alias shares the header between steps.
	for _, st := range p.Scenarios[0].Steps {
		if len(st.Headers) != 1 || st.Headers[0].Value.String(nil) != "${NOT_ENV}" {
			t.Errorf("headers = %+v", st.Headers)
		}
	}
}

// TestEnv covers ${ENV} substitution and that secrets stay out of Source.
func TestEnv(t *testing.T) {
	const src = `name: ${NAME:-dflt}
target: ${TARGET}
defaults: {headers: {Authorization: "Bearer ${TOKEN}", X-Empty: "${EMPTY:-fallback}", X-Lit: "$${TOKEN} $$ cost"}}
scenarios: {s: {steps: [{get: "/x?k=${TOKEN}"}]}}
load: {stages: [{duration: "${DUR:-1m}", users: "${USERS}"}]}
`
	env := map[string]string{"TARGET": "http://h:1", "TOKEN": "top-secret", "EMPTY": "", "USERS": "7"}
	p, err := Parse("p.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, got, want string
	}{
		// A default applies when the variable is unset.
		{"default", p.Name, "dflt"},
		{"plain", p.Target, "http://h:1"},
		{"secret in header", p.Defaults.Headers[0].Value.String(nil), "Bearer top-secret"},
		// As in a shell, :- also covers a variable set but empty.
		{"empty uses default", p.Defaults.Headers[1].Value.String(nil), "fallback"},
		// $${ is a literal ${; a lone $ stays as written.
		{"escape", p.Defaults.Headers[2].Value.String(nil), "${TOKEN} $$ cost"},
		// A secret in a URL is escaped like any literal text of the URL.
		{"url", p.Scenarios[0].Steps[0].URL.String(nil), "/x?k=top-secret"},
		// Step names, which reach reports, show the reference, not the value.
		{"step name", p.Scenarios[0].Steps[0].Name, "GET /x?k=${TOKEN}"},
		// Template sources agree with what they render.
		{"source", p.Defaults.Headers[0].Value.Source, "Bearer top-secret"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	if p.Load.Stages[0].To != 7 || p.Load.Stages[0].Duration != time.Minute {
		t.Errorf("stage = %+v", p.Load.Stages[0])
	}
	if strings.Contains(string(p.Source), "top-secret") || string(p.Source) != src {
		t.Errorf("Source must be the unexpanded text:\n%s", p.Source)
	}

	// An unset variable without a default is an error naming it, at the
	// reference's column.
	_, err = Parse("p.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok && k != "TOKEN" })
	want := "p.yaml:3:45: environment variable TOKEN is not set: set it or write ${TOKEN:-default}\n" +
		"p.yaml:4:37: environment variable TOKEN is not set: set it or write ${TOKEN:-default}"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestPositionsInsideScalars(t *testing.T) {
	const pre = "target: demo\nload: {stages: [{duration: 1s, users: 1}]}\nscenarios:\n  s:\n    steps:\n"
	tests := []struct {
		name, step, want string
	}{
		// Plain scalar: the column of the {{ that is not closed.
		{"plain", "      - get: /a/{{ x\n", "t.yaml:6:17: unterminated"},
		// Quoted scalar: one more for the quote.
		{"quoted", "      - get: \"/a/{{ x\"\n", "t.yaml:6:18: unterminated"},
		// Escapes make offsets unreliable, so point at the scalar.
		{"escaped", "      - get: \"/\\u0061/{{ x\"\n", "t.yaml:6:14: unterminated"},
		// Block scalars too.
		{"block", "      - get: |\n          /a/{{ x\n", "t.yaml:6:14: unterminated"},
		// Multi-byte text before the reference counts as one column a rune.
		{"utf8", "      - get: /é/{{ nope }}\n", "t.yaml:6:17: unknown capture"},
	}
	for _, tt := range tests {
		_, err := Parse("t.yaml", []byte(pre+tt.step), nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want prefix %q", tt.name, err, tt.want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	p, err := LoadFileWith("testdata/good/scalection.yaml", LoadOptions{})
	if err != nil || p.File != "testdata/good/scalection.yaml" {
		t.Fatalf("LoadFile: %v", err)
	}
	if _, err := LoadFileWith("testdata/none.yaml", LoadOptions{}); err == nil {
		t.Fatal("LoadFile of a missing file must fail")
	}
}

func TestSuggest(t *testing.T) {
	valid := []string{"stages", "pace", "max_in_flight", "grace"}
	tests := []struct{ in, want string }{
		{"stagse", "stages"},             // transposition: distance 2
		{"Stages", "stages"},             // case
		{"max", "max_in_flight"},         // prefix
		{"maxinflight", "max_in_flight"}, // two insertions
		{"limit", ""},                    // too far and not a prefix
		{"g", ""},                        // one letter is no evidence
	}
	for _, tt := range tests {
		if got := Suggest(tt.in, valid); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestYAMLErrorLines(t *testing.T) {
	tests := []struct{ name, src, want string }{
		// yaml.v3 says "line 1" here, counting the flow's line from 0.
		{"flow", "target: demo\nscenarios: {s: [}\n", "y.yaml:2:1: invalid YAML: did not find expected node content"},
		// yaml.v3 gives no line at all here.
		{"no line", "a: 1\nb: c: d\n", "y.yaml:2:1: invalid YAML: mapping values are not allowed in this context"},
		// yaml.v3 points at the sequence; the bad indent is a line later.
		{"indent", "a:\n  - x\n - y\n", "y.yaml:3:1: invalid YAML: did not find expected key"},
		// A tab used for indentation.
		{"tab", "a:\n\tb: 1\n", "y.yaml:2:1: invalid YAML: found character that cannot start any token"},
	}
	for _, tt := range tests {
		_, err := Parse("y.yaml", []byte(tt.src), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
}

// TestAliasBombs: aliases can make a small file describe a huge or cyclic
// value; loading must fail fast instead of running out of memory or stack.
func TestAliasBombs(t *testing.T) {
	laughs := "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 1; i < 9; i++ {
		prev := "*a" + itoa(i-1)
		laughs += "a" + itoa(i) + ": &a" + itoa(i) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n"
	}
	tests := []struct{ name, src, want string }{
		// 10^9 strings behind one json key.
		{"json laughs", "target: demo\nload: {stages: [{duration: 1s, users: 1}]}\nscenarios: {s: {steps: [{post: /, json: {x: &top {" + strings.ReplaceAll(strings.TrimSpace(strings.ReplaceAll(laughs, "\n", ", ")), ": &", ": &") + "}}}]}}\n", "json body too large"},
		// A list that contains itself.
		{"json cycle", "target: demo\nload: {stages: [{duration: 1s, users: 1}]}\nscenarios: {s: {steps: [{post: /, json: &c [*c]}]}}\n", "json body too large"},
		// 10^9 steps through nested step lists would be an error anyway, but
		// must be a quick one.
		{"steps laughs", "target: demo\nload: {stages: [{duration: 1s, users: 1}]}\nscenarios: {s: {steps: {" + strings.ReplaceAll(strings.TrimSpace(strings.ReplaceAll(laughs, "\n", ", ")), "[x,", "[{get: /},") + "}}}\n", "bad steps"},
	}
	for _, tt := range tests {
		start := time.Now()
		_, err := Parse("b.yaml", []byte(tt.src), nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", tt.name, d)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
