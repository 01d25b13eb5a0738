package convert

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

func curlPlan(t *testing.T, cmd string) (*plan.Plan, string, Summary) {
	t.Helper()
	out, s, err := Curl(cmd, Options{})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	// Credentials become ${ENV} references the user sets (curlauth.go).
	p, err := plan.Parse("c.yaml", out, func(string) (string, bool) { return "set-by-the-user", true })
	if err != nil {
		t.Fatalf("%s: the plan does not load: %v\n%s", cmd, err, out)
	}
	return p, string(out), s
}

// An option that takes a value must not leave its value to be read as the
// URL, wherever it stands and however it is written.
func TestCurlOptionValuesAreNotTheURL(t *testing.T) {
	for _, cmd := range []string{
		`curl -m 5 https://api.example.com/v1/x`,
		`curl --max-time 5 https://api.example.com/v1/x`,
		`curl --connect-timeout 3 -x http://proxy:3128 -w '%{http_code}' https://api.example.com/v1/x`,
		`curl -sSo /dev/null -c jar.txt --cacert ca.pem --resolve api.example.com:443:127.0.0.1 https://api.example.com/v1/x`,
		`curl -sm5 https://api.example.com/v1/x -o out.json`,
		`curl --retry 2 --limit-rate 1k https://api.example.com/v1/x`,
	} {
		p, text, _ := curlPlan(t, cmd)
		if p.Target != "https://api.example.com" || requests(p)[0].URL.Source != "/v1/x" {
			t.Errorf("%s: target %q url %q\n%s", cmd, p.Target, requests(p)[0].URL.Source, text)
		}
	}
	if _, _, err := Curl(`curl -T photo.jpg https://h.test/up`, Options{}); err == nil || !strings.Contains(err.Error(), "body_file") {
		t.Errorf("-T: %v", err)
	}
}

func TestCurlFormBecomesMultipart(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "cat.txt")
	if err := os.WriteFile(f, []byte("meow"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir) // curl's files are read from the current directory (curlfiles.go)
	p, text, _ := curlPlan(t, `curl -F title=hi -F 'meta={"a":1};type=application/json' -F 'photo=@`+f+`;type=text/plain' https://h.test/up`)
	st := requests(p)[0]
	if st.Method != "POST" || !strings.Contains(text, "multipart:") || !strings.Contains(text, "title: hi") ||
		!strings.Contains(text, "content_type: application/json") || !strings.Contains(text, "file: "+f) ||
		strings.Contains(text, "x-www-form-urlencoded") {
		t.Errorf("%s %s\n%s", st.Method, st.URL.Source, text)
	}
}

// Every header typed for curl goes out, and user:password@ becomes the
// target's Basic authentication, its password read from the environment.
func TestCurlKeepsTypedHeadersAndCredentials(t *testing.T) {
	p, text, s := curlPlan(t, `curl -A 'my-agent/1' -e https://ref.test/ -H 'Origin: https://app.test' -H 'Host: other.test' -H 'Accept-Language: fr' https://ann:s3cret@api.test/x`)
	for _, want := range []string{"User-Agent: my-agent/1", "Referer: https://ref.test/", "Origin: https://app.test", "Accept-Language: fr"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if p.Target != "https://api.test" || !strings.Contains(text, "target: https://ann:${CURL_PASSWORD}@api.test") || strings.Contains(text, "s3cret") {
		t.Errorf("target %q\n%s", p.Target, text)
	}
	if strings.Contains(text, "Host:") || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "Host") {
		t.Errorf("a typed Host is sent by the client from the target: want it out with a note (%v)\n%s", s.Notes, text)
	}
}

// A captured string in a body written raw (because a number in it is
// templated) is written escaped: the plan sends valid JSON whatever the
// capture holds.
func TestRawJSONBodyEscapesCapturedStrings(t *testing.T) {
	tricky := `o"1\2-ab12cd34`
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/api/order", status: 201,
			respMime: "application/json", respText: `{"order_id":987654,"ref":"` + strings.ReplaceAll(strings.ReplaceAll(tricky, `\`, `\\`), `"`, `\"`) + `"}`},
		entry{started: t0.Add(time.Second), ms: 5, method: "POST", url: "http://app.test/api/pay", reqMime: "application/json",
			reqText: `{"order":987654,"ref":"` + strings.ReplaceAll(strings.ReplaceAll(tricky, `\`, `\\`), `"`, `\"`) + `","qty":3}`, status: 200},
	)
	p, text, _ := load(t, har, Options{})
	st := requests(p)[1]
	if st.Body == nil || !strings.Contains(text, `"order":{{ order_id }}`) {
		t.Fatalf("body:\n%s", text)
	}
	// Rendered with the value the server hands out at run time.
	for _, held := range []string{tricky, `x"y\z</a>&`} {
		caps := map[string]string{"order_id": "1", "ref": held}
		got := renderWith(t, p, st.Body, caps)
		var doc struct{ Ref string }
		if err := jsonUnmarshal(got, &doc); err != nil || doc.Ref != held {
			t.Errorf("body %s: %v, ref %q", got, err, doc.Ref)
		}
	}
}

// Plain words and small numbers a client sends of its own accord are not
// taken for values the server handed out, even where an earlier answer
// holds the same text; tokens are.
func TestNoCoincidentalCorrelation(t *testing.T) {
	data, err := os.ReadFile("testdata/edge.har")
	if err != nil {
		t.Fatal(err)
	}
	_, text, _ := load(t, data, Options{})
	for _, want := range []string{"/api/products/list?size=100&t={{ token }}", "qty: 12345"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	for _, gone := range []string{"{{ kind }}", "{{ total }}", "{{ n }}"} {
		if strings.Contains(text, gone) {
			t.Errorf("coincidental %s:\n%s", gone, text)
		}
	}
	// A recorded 304 answered conditional headers the plan does not send.
	if strings.Contains(text, "304") {
		t.Errorf("304 expected:\n%s", text)
	}
}

func TestErrorStatusesAreNotRequired(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/a", status: 404},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/b", status: 503},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/c", status: 304, reqH: map[string]string{"If-None-Match": `"x"`}},
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/d", status: 302, respH: map[string]string{"Location": "/a"}},
	)
	p, text, s := load(t, har, Options{})
	rs := requests(p)
	for i := 0; i < 3; i++ {
		if len(rs[i].Expect.Status) != 0 {
			t.Errorf("step %s expects %+v\n%s", rs[i].URL.Source, rs[i].Expect.Status, text)
		}
	}
	if len(rs[3].Expect.Status) != 1 || rs[3].Expect.Status[0].Code != 302 {
		t.Errorf("the redirect keeps its status: %+v", rs[3].Expect)
	}
	if n := strings.Count(strings.Join(s.Notes, "\n"), "recorded answer"); n != 2 {
		t.Errorf("notes %v", s.Notes)
	}
}

// Django's csrftoken cookie sent back as X-CSRFToken: captured from the
// Set-Cookie that set it.
func TestCookieToHeaderCSRF(t *testing.T) {
	data, err := os.ReadFile("testdata/csrf.har")
	if err != nil {
		t.Fatal(err)
	}
	p, text, s := load(t, data, Options{})
	rs := requests(p)
	if len(rs[0].Captures) != 1 || rs[0].Captures[0].Kind != plan.CaptureHeader || rs[0].Captures[0].Header != "Set-Cookie" {
		t.Fatalf("captures %v\n%s", s.Captures, text)
	}
	if strings.Contains(text, "Zq8w1TkP0aXv") {
		t.Errorf("the recorded token is still sent:\n%s", text)
	}
	h := rs[1].Headers[0]
	got := renderWith(t, p, h.Value, map[string]string{rs[0].Captures[0].Name: "csrftoken=NEWtoken99; Path=/; SameSite=Lax"})
	if h.Name != "X-CSRFToken" || string(got) != "NEWtoken99" {
		t.Errorf("%s: %q", h.Name, got)
	}

	// Not the first Set-Cookie: a header capture cannot read it; say so.
	har := harOf(t,
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/", status: 200},
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/x", reqH: map[string]string{"X-CSRFToken": "Zq8w1TkP0aXv"}, status: 200},
	)
	har = []byte(strings.Replace(string(har), `"headers":[],"status"`, `"headers":[{"name":"Set-Cookie","value":"sessionid=s1; Path=/"},{"name":"Set-Cookie","value":"csrftoken=Zq8w1TkP0aXv; Path=/"}],"status"`, 1))
	_, text, s = load(t, har, Options{})
	if !strings.Contains(strings.Join(s.Notes, "\n"), "csrftoken cookie") {
		t.Errorf("no note: %v\n%s", s.Notes, text)
	}
}

// A multipart form recorded as params stays multipart; a file part the
// recording cannot give is left out with a note.
func TestMultipartParams(t *testing.T) {
	data, err := os.ReadFile("testdata/csrf.har")
	if err != nil {
		t.Fatal(err)
	}
	p, text, s := load(t, data, Options{})
	st := requests(p)[2]
	if st.Method != "POST" || !strings.Contains(text, "multipart:\n          title: hi") || strings.Contains(text, "form:\n          title") {
		t.Errorf("upload:\n%s", text)
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), `multipart file "file" (a.txt)`) {
		t.Errorf("notes %v", s.Notes)
	}
}

func TestIndexKeepsLatestSource(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/a", status: 200, respMime: "application/json", respText: `{"token":"old0123456789"}`},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/b", status: 200, respMime: "application/json", respText: `{"token":"new0123456789","other":"old0123456789"}`},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/c", reqH: map[string]string{"X-Token": "new0123456789"}, status: 200},
	)
	p, text, _ := load(t, har, Options{})
	rs := requests(p)
	if len(rs[1].Captures) != 1 || len(rs[0].Captures) != 0 || !strings.Contains(text, "X-Token: '{{ token }}'") {
		t.Errorf("captures:\n%s", text)
	}
}

// renderWith renders a template of p with the captures named as given, as
// a user running the plan would.
func renderWith(t *testing.T, p *plan.Plan, tm *plan.Template, caps map[string]string) []byte {
	t.Helper()
	var captures []string
	for _, st := range p.Scenarios[0].Steps {
		for _, c := range st.Captures {
			for len(captures) <= c.Slot {
				captures = append(captures, "")
			}
			if v, ok := caps[c.Name]; ok {
				captures[c.Slot] = v
			}
		}
	}
	return tm.Append(nil, &plan.Env{Captures: captures})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
