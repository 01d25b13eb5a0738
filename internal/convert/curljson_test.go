package convert

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

// curlStep converts cmd and loads the plan, returning its one request
// and the plan's text.
func curlStep(t *testing.T, cmd string) (*plan.Step, string) {
	t.Helper()
	out, _, err := Curl(cmd, Options{})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	p, err := plan.Parse("c.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return requests(p)[0], string(out)
}

// stepHeaders are a step's header values by name, lower case.
func stepHeaders(st *plan.Step) map[string][]string {
	h := map[string][]string{}
	for _, e := range st.Headers {
		n := strings.ToLower(e.Name)
		h[n] = append(h[n], e.Value.String(nil))
	}
	return h
}

// curl --json sends Accept: application/json as well as the Content-Type
// (curl 7.82+), unless the command names its own Accept.
func TestCurlJSONAsksForJSON(t *testing.T) {
	for cmd, want := range map[string][]string{
		`curl http://127.0.0.1:19100/v1/votes -H "voter-id: 7" --json "{\"partyId\":\"p1\"}"`: {"application/json"},
		`curl http://h.test/v1/votes --json '{"partyId":"p1"}' -H 'Accept: text/plain'`:       {"text/plain"},
		`curl http://h.test/v1/votes -H 'accept: application/xml' --json '{"partyId":"p1"}'`:  {"application/xml"},
		// -H 'Accept:' tells curl to send none: --json adds none either.
		`curl http://h.test/v1/votes -H 'Accept:' --json '{"partyId":"p1"}'`: nil,
		// -d is not --json: curl's own Accept: */*, which a plan leaves out.
		`curl http://h.test/v1/votes -d '{"partyId":"p1"}'`: nil,
	} {
		st, text := curlStep(t, cmd)
		h := stepHeaders(st)
		if got := h["accept"]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: Accept %q, want %q\n%s", cmd, got, want, text)
		}
		if strings.Contains(cmd, "--json") && st.ContentType != "application/json" && strings.Join(h["content-type"], "") != "application/json" {
			t.Errorf("%s: Content-Type %q / %q, want application/json\n%s", cmd, st.ContentType, h["content-type"], text)
		}
	}
}

// A -d or --json body is sent as the bytes curl sends: a JSON body the
// plan's json: would send differently (spaces, 1.0 written apart, escapes
// such as \u00e9 or \/) is kept as text; one json: sends as typed stays
// json:, which reads better.
func TestCurlJSONBodyBytesKept(t *testing.T) {
	for _, tc := range []struct {
		cmd, body string
		asJSON    bool // written as json: in the plan
	}{
		{`curl http://h.test/v --json '{"a": 1.0}'`, `{"a": 1.0}`, false},
		// -d says form, as curl does, and sends the same bytes.
		{`curl http://h.test/v --data-raw '{"a": 1.0, "b": [1, 2]}'`, `{"a": 1.0, "b": [1, 2]}`, false},
		{`curl http://h.test/v -H 'Content-Type: application/json' -d '{"s":"\u00e9\/x","n":1e3}'`, `{"s":"\u00e9\/x","n":1e3}`, false},
		{`curl http://h.test/v --json $'{\n  "a": "{{ not a template }}",\n  "b": "${HOME}"\n}\n'`, "{\n  \"a\": \"{{ not a template }}\",\n  \"b\": \"${HOME}\"\n}\n", false},
		{`curl http://h.test/v --json '{"partyId":"p1","n":3,"f":1.50}'`, `{"partyId":"p1","n":3,"f":1.50}`, true},
		{`curl http://h.test/v --json '[{"a":"x"},null,true]'`, `[{"a":"x"},null,true]`, true},
	} {
		st, text := curlStep(t, tc.cmd)
		sent := st.StaticBody
		if sent == nil && st.Body != nil {
			sent = []byte(st.Body.String(nil))
		}
		if !bytes.Equal(sent, []byte(tc.body)) {
			t.Errorf("%s: the plan sends %q, curl %q\n%s", tc.cmd, sent, tc.body, text)
		}
		if got := strings.Contains(text, "json:"); got != tc.asJSON {
			t.Errorf("%s: json: in the plan %v, want %v\n%s", tc.cmd, got, tc.asJSON, text)
		}
		want := "application/json"
		if strings.Contains(tc.cmd, "--data-raw") {
			want = "application/x-www-form-urlencoded"
		}
		if h := stepHeaders(st); st.ContentType != want && strings.Join(h["content-type"], "") != want {
			t.Errorf("%s: Content-Type %q / %q, want %s\n%s", tc.cmd, st.ContentType, h["content-type"], want, text)
		}
	}
}
