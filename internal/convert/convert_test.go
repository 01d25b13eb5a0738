package convert

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/plan"
)

// entry is a HAR entry written by the test; zero fields are left out of
// the JSON, as recorders leave out what they do not know.
type entry struct {
	started  time.Time
	ms       float64 // -1: unknown
	method   string
	url      string
	reqH     map[string]string
	reqMime  string
	reqText  string
	reqEnc   string
	params   [][2]string
	status   int
	respH    map[string]string
	respMime string
	respText string
	respEnc  string
	resType  string
}

func harOf(t *testing.T, es ...entry) []byte {
	t.Helper()
	var list []any
	for _, e := range es {
		req := map[string]any{"method": e.method, "url": e.url, "headers": nv(e.reqH)}
		if e.reqText != "" || e.params != nil {
			pd := map[string]any{"mimeType": e.reqMime, "text": e.reqText}
			if e.reqEnc != "" {
				pd["encoding"] = e.reqEnc
			}
			if e.params != nil {
				var ps []map[string]string
				for _, p := range e.params {
					ps = append(ps, map[string]string{"name": p[0], "value": p[1]})
				}
				pd["params"] = ps
				delete(pd, "text")
			}
			req["postData"] = pd
		}
		content := map[string]any{"mimeType": e.respMime, "text": e.respText}
		if e.respEnc != "" {
			content["encoding"] = e.respEnc
		}
		m := map[string]any{
			"request":  req,
			"response": map[string]any{"status": e.status, "headers": nv(e.respH), "content": content},
		}
		if !e.started.IsZero() {
			m["startedDateTime"] = e.started.Format(time.RFC3339Nano)
		}
		if e.ms != 0 {
			m["time"] = e.ms
		}
		if e.resType != "" {
			m["_resourceType"] = e.resType
		}
		list = append(list, m)
	}
	b, err := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": list}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func nv(m map[string]string) []map[string]string {
	out := []map[string]string{}
	for k, v := range m {
		out = append(out, map[string]string{"name": k, "value": v})
	}
	return out
}

// load converts and loads the plan with stampede's own loader.
func load(t *testing.T, har []byte, o Options) (*plan.Plan, string, Summary) {
	t.Helper()
	out, s, err := HAR(har, o)
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	p, err := plan.Parse("converted.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("the converted plan does not load: %v\n%s", err, out)
	}
	return p, string(out), s
}

func requests(p *plan.Plan) []*plan.Step {
	var out []*plan.Step
	for _, st := range p.Scenarios[0].Steps {
		if st.Kind == plan.StepRequest {
			out = append(out, st)
		}
	}
	return out
}

var t0 = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

func TestCorrelationCSRFBearerAndID(t *testing.T) {
	page := `<html><head><meta name="csrf-token" content="c5rf-9f8e7d6c5b4a"></head><body>` +
		`<form><input type="hidden" name="authenticity_token" value="AbCdEf0123456789"></form></body></html>`
	har := harOf(t,
		entry{started: t0, ms: 20, method: "GET", url: "http://app.test/", status: 200, respMime: "text/html", respText: page, resType: "document"},
		entry{started: t0.Add(30 * time.Millisecond), ms: 5, method: "GET", url: "http://app.test/static/app.js", status: 200, respMime: "application/javascript", respText: "x()", resType: "script"},
		entry{started: t0.Add(40 * time.Millisecond), ms: 5, method: "GET", url: "http://cdn.other.test/logo.png", status: 200, respMime: "image/png", resType: "image"},
		entry{started: t0.Add(2 * time.Second), ms: 30, method: "POST", url: "http://app.test/login",
			reqH:    map[string]string{"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "Mozilla/5.0", "Cookie": "sid=1", "Accept-Language": "en"},
			reqMime: "application/x-www-form-urlencoded", reqText: "user=ann&authenticity_token=AbCdEf0123456789",
			status: 200, respMime: "application/json", respText: `{"session":{"access_token":"eyJhbGciOi.tok.en"},"user":{"id":"u-1234"}}`},
		entry{started: t0.Add(3 * time.Second), ms: 10, method: "POST", url: "http://app.test/orders",
			reqH:    map[string]string{"Authorization": "Bearer eyJhbGciOi.tok.en", "X-CSRF-Token": "c5rf-9f8e7d6c5b4a", "Content-Type": "application/json"},
			reqMime: "application/json", reqText: `{"user":"u-1234","items":[{"sku":"A1","qty":2}]}`,
			status: 201, respMime: "application/json", respText: `{"order":{"id":98765,"state":"new"}}`},
		entry{started: t0.Add(4 * time.Second), ms: 10, method: "GET", url: "http://app.test/orders/98765?user=u-1234",
			reqH:   map[string]string{"Authorization": "Bearer eyJhbGciOi.tok.en"},
			status: 200, respMime: "application/json", respText: `{"order":{"id":98765,"state":"paid"}}`},
		entry{started: t0.Add(5 * time.Second), ms: 10, method: "PUT", url: "http://app.test/orders/98765/pay",
			reqH:    map[string]string{"Authorization": "Bearer eyJhbGciOi.tok.en", "Content-Type": "application/json"},
			reqMime: "application/json", reqText: `{"order":98765,"amount":12.5}`,
			status: 204},
	)
	p, text, s := load(t, har, Options{Source: "t.har"})
	if s.Static != 1 || s.ThirdParty != 1 || s.Kept != 5 {
		t.Fatalf("kept %d, static %d, third-party %d; want 5, 1, 1\n%s", s.Kept, s.Static, s.ThirdParty, text)
	}
	if p.Target != "http://app.test" {
		t.Errorf("target %q", p.Target)
	}
	rs := requests(p)
	// The page captures both tokens by the markup around them, and the
	// capture finds exactly the recorded values in the recorded page.
	caps := map[string]plan.Capture{}
	for _, st := range rs {
		for _, c := range st.Captures {
			caps[c.Name] = c
		}
	}
	for name, want := range map[string]string{"csrf_token": "c5rf-9f8e7d6c5b4a", "authenticity_token": "AbCdEf0123456789"} {
		c, ok := caps[name]
		if !ok || c.Kind != plan.CaptureRegex {
			t.Fatalf("no regex capture %s; captures %v\n%s", name, s.Captures, text)
		}
		if m := c.Regex.FindStringSubmatch(page); m == nil || m[1] != want {
			t.Errorf("capture %s finds %v in the page, want %q", name, m, want)
		}
	}
	if c := caps["access_token"]; c.Kind != plan.CaptureJSON || strings.Join(c.JSONPath, ".") != "session.access_token" {
		t.Errorf("access_token capture %+v\n%s", c, text)
	}
	if c := caps["order_id"]; c.Kind != plan.CaptureJSON || strings.Join(c.JSONPath, ".") != "order.id" {
		t.Errorf("order_id capture %+v\n%s", c, text)
	}
	for _, want := range []string{
		"authenticity_token: '{{ authenticity_token }}'",
		"Authorization: Bearer {{ access_token }}",
		"X-CSRF-Token: '{{ csrf_token }}'",
		"user: '{{ user_id }}'",
		"get: /orders/{{ order_id }}?user={{ user_id }}",
		"put: /orders/{{ order_id }}/pay",
		`body: '{"order":{{ order_id }},"amount":12.5}'`, // a number stays a number
		"sku: A1",
		"think: 1980ms", // from the end of the page (20ms) to the login 2s after its start
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan lacks %q:\n%s", want, text)
		}
	}
	for _, gone := range []string{"User-Agent", "Cookie:", "Accept-Language", "app.js", "logo.png", "eyJhbGciOi", "98765"} {
		if strings.Contains(text, gone) {
			t.Errorf("plan still has %q:\n%s", gone, text)
		}
	}
}

func TestKeepStaticAndThirdParty(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "GET", url: "https://app.test/", status: 200, respMime: "text/html", respText: "<p>hi</p>", resType: "document"},
		entry{started: t0, ms: 5, method: "GET", url: "https://app.test/site.css", status: 200, respMime: "text/css"},
		entry{started: t0, ms: 5, method: "GET", url: "https://fonts.other.test/f.woff2", status: 200},
		entry{started: t0, ms: 5, method: "OPTIONS", url: "https://app.test/api", status: 204},
	)
	p, text, s := load(t, har, Options{KeepStatic: true, KeepThirdParty: true})
	if s.Kept != 3 || s.Other != 1 {
		t.Fatalf("kept %d other %d\n%s", s.Kept, s.Other, text)
	}
	rs := requests(p)
	if got := rs[2].URL.Source; got != "https://fonts.other.test/f.woff2" {
		t.Errorf("third-party step URL %q: want it absolute", got)
	}
	if !strings.Contains(text, "get: /site.css") || p.Target != "https://app.test" {
		t.Errorf("plan:\n%s", text)
	}
}

func TestRedirectBase64AndMissingTimings(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	html := `<a href="/done">ok</a> <span data-receipt="RCPT-77aa88bb">`
	har := harOf(t,
		// No startedDateTime or time at all on the first two.
		entry{ms: -1, method: "POST", url: "http://app.test/checkout", reqMime: "application/json", reqText: `{"cart":"k9"}`,
			reqH: map[string]string{"Content-Type": "application/json"}, status: 303, respH: map[string]string{"Location": "/receipt"}},
		entry{method: "GET", url: "http://app.test/receipt", status: 200, respMime: "text/html",
			respText: base64.StdEncoding.EncodeToString([]byte(html)), respEnc: "base64"},
		// A binary upload recorded base64, and a form given as params.
		entry{started: t0, ms: -1, method: "POST", url: "http://app.test/upload", reqMime: "application/octet-stream",
			reqText: base64.StdEncoding.EncodeToString(png), reqEnc: "base64", status: 200},
		entry{started: t0.Add(1500 * time.Millisecond), method: "POST", url: "http://app.test/confirm", reqMime: "application/x-www-form-urlencoded",
			params: [][2]string{{"receipt", "RCPT-77aa88bb"}, {"note", "a b&c ${HOME}"}}, status: 200},
	)
	p, text, s := load(t, har, Options{})
	rs := requests(p)
	if len(rs) != 4 {
		t.Fatalf("%d requests, want 4\n%s", len(rs), text)
	}
	if len(rs[0].Expect.Status) != 1 || rs[0].Expect.Status[0].Code != 303 {
		t.Errorf("the redirect step should expect 303: %+v", rs[0].Expect)
	}
	if rs[1].URL.Source != "/receipt" || rs[1].Method != "GET" {
		t.Errorf("the redirect's target is not the next step: %s %s", rs[1].Method, rs[1].URL.Source)
	}
	// The base64 page was decoded before it was searched.
	if len(rs[1].Captures) != 1 || rs[1].Captures[0].Kind != plan.CaptureRegex {
		t.Fatalf("no capture from the base64 page: %v\n%s", s.Captures, text)
	}
	if m := rs[1].Captures[0].Regex.FindStringSubmatch(html); m == nil || m[1] != "RCPT-77aa88bb" {
		t.Errorf("receipt capture finds %v", m)
	}
	if rs[2].Body != nil || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "binary") {
		t.Errorf("a binary body should be left out with a note: notes %v", s.Notes)
	}
	if !strings.Contains(text, "receipt: '{{ data_receipt }}'") || !strings.Contains(text, "note: a b&c $${HOME}") {
		t.Errorf("form:\n%s", text)
	}
	// Only the last pair has both times: 1.5s from the start of the one
	// before (its duration unknown).
	if n := strings.Count(text, "think:"); n != 1 || !strings.Contains(text, "think: 1500ms") {
		t.Errorf("think steps (%d):\n%s", n, text)
	}
	if rs[3].Body == nil || !strings.Contains(rs[3].Body.Source, "HOME") {
		t.Errorf("the form body lost its literal ${HOME}")
	}
}

func TestClientUUIDBecomesFresh(t *testing.T) {
	id := "0b6f3b52-5d0a-4c1e-9d55-3f8c2a1b7e90"
	twice := "11111111-2222-4333-8444-555555555555"
	har := harOf(t,
		entry{started: t0, ms: 5, method: "POST", url: "http://app.test/votes", reqH: map[string]string{"voter-id": id, "x-trace": twice},
			reqMime: "application/json", reqText: `{"partyId":"p1"}`, status: 201, respMime: "application/json", respText: `{"status":"counted"}`},
		entry{started: t0.Add(time.Second), ms: 5, method: "GET", url: "http://app.test/x", reqH: map[string]string{"x-trace": twice}, status: 200},
	)
	_, text, s := load(t, har, Options{})
	if !strings.Contains(text, "voter-id: '{{ uuid }}'") || len(s.Generated) != 2 {
		t.Errorf("a UUID the client made should become {{ uuid }}:\n%s", text)
	}
	// Sent twice: the two requests must keep sending one value, drawn
	// once per iteration (clientvalues_test.go runs it).
	if strings.Contains(text, twice) || strings.Count(text, "x-trace: '{{ client_uuid1 }}'") != 2 || !strings.Contains(text, "for_each: '[uuid()]'") {
		t.Errorf("a UUID sent twice must be one value drawn per iteration:\n%s", text)
	}
}

func TestNoCorrelate(t *testing.T) {
	har := harOf(t,
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/a", status: 200, respMime: "application/json", respText: `{"token":"abcdef123456"}`},
		entry{started: t0, ms: 5, method: "GET", url: "http://app.test/b", reqH: map[string]string{"X-Token": "abcdef123456"}, status: 200},
	)
	_, text, _ := load(t, har, Options{NoCorrelate: true})
	if strings.Contains(text, "capture") || !strings.Contains(text, "X-Token: abcdef123456") {
		t.Errorf("--no-correlate:\n%s", text)
	}
}

func TestHARErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":   "hello",
		"no entries": `{"log":{"entries":[]}}`,
		"only data":  `{"log":{"entries":[{"request":{"method":"GET","url":"data:text/plain,hi"},"response":{"status":200}}]}}`,
	} {
		if _, _, err := HAR([]byte(in), Options{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// Everything static: say what to do.
	har := harOf(t, entry{method: "GET", url: "http://app.test/a.js", status: 200, resType: "script"})
	if _, _, err := HAR(har, Options{}); err == nil || !strings.Contains(err.Error(), "--keep-static") {
		t.Errorf("all-static error %v", err)
	}
}

func TestCurl(t *testing.T) {
	cmd := `curl 'https://api.test/v1/votes?x=1' \
  -H 'voter-id: 7' -H $'X-Note: it\'s' \
  -H 'User-Agent: Mozilla' -b 'sid=abc' \
  --data-raw '{"partyId":"p1","n":3}' --compressed -k`
	out, s, err := Curl(cmd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("c.yaml", out, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st := requests(p)[0]
	if st.Method != "POST" || p.Target != "https://api.test" || st.URL.Source != "/v1/votes?x=1" {
		t.Errorf("%s %s %s", st.Method, p.Target, st.URL.Source)
	}
	text := string(out)
	for _, want := range []string{"voter-id: \"7\"", "X-Note: it's", "Cookie: sid=abc", "partyId: p1", "n: 3", "Content-Type: application/x-www-form-urlencoded"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	// A header typed for curl is the user's: kept, as curl sends it.
	// The notes: -k's, and --compressed's (curl30_test.go).
	if !strings.Contains(text, "User-Agent: Mozilla") || len(s.Notes) != 2 {
		t.Errorf("user agent dropped or no -k and --compressed notes (%v):\n%s", s.Notes, text)
	}

	out, _, err = Curl(`curl -u ann:pw -G -d q=a+b -d page=2 http://h.test/search`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// -u's password is left for the environment (curlauth.go).
	if !strings.Contains(string(out), "get: /search?q=a+b&page=2") || !strings.Contains(string(out), "target: http://ann:${CURL_PASSWORD}@h.test") || strings.Contains(string(out), "pw") {
		t.Errorf("-G -d / -u:\n%s", out)
	}
	out, _, err = Curl(`curl -X PUT http://h.test/f -d 'a=1&b=x%20y'`, Options{})
	if err != nil || !strings.Contains(string(out), "put: /f") || !strings.Contains(string(out), "b: x y") {
		t.Errorf("form: %v\n%s", err, out)
	}
	for _, bad := range []string{`curl -H`, `curl 'unterminated`, `curl -X GET`, `curl ftp://h/x`} {
		if _, _, err := Curl(bad, Options{}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
