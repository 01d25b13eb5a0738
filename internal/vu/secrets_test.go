package vu

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// A capture that feeds a secret header, or is marked secret, is hidden
// from the moment it is captured: here a step sends the tokens in its URL
// before any header carries them, and the server echoes the URL on a 500.
// A capture that is neither stays visible (it is no credential).
func TestSecretCapturesAreHiddenOnceCaptured(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/login" {
			fmt.Fprint(w, `{"token":"tok-feeds-header","key":"key-marked-secret","id":"order-visible"}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "echo %s cookie=%s", r.URL.String(), r.Header.Get("Cookie"))
	}))
	defer srv.Close()
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - name: login
        post: /login
        capture: {token: {json: token}, key: {json: key, secret: true}, id: {json: id}}
      - name: early
        get: "/x?t={{ token }}&k={{ key }}&id={{ id }}"
      - name: auth
        get: /y
        headers: {Authorization: "Bearer {{ token }}"}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	rec.Configure(metrics.ErrorOptions{Redact: u.prog.Plan.Redact}) // as run.Run does
	u.Iterate(sc, time.Time{}, Stop{Soft: make(chan struct{})})
	snap := rec.Snapshot()
	errs := snap.Steps[1].Errors
	if len(errs) != 1 {
		t.Fatalf("early step errors: %+v", errs)
	}
	msg := errs[0].Message
	if strings.Contains(msg, "tok-feeds-header") || strings.Contains(msg, "key-marked-secret") || !strings.Contains(msg, "order-visible") {
		t.Errorf("message %q: want the token and key hidden, the id shown", msg)
	}
}

// readSamples is the failure log at path as its lines' text.
func readSamples(t *testing.T, log *metrics.FailureLog, path string) string {
	t.Helper()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A secret capture is hidden even when its step fails: by a check on the
// same answer, or by a capture before it that finds nothing. The failure
// sample then holds the answer, token included, unless the token was
// noted before the step was judged. A failed step still keeps none of
// its captures.
func TestSecretCaptureOfAFailedStepIsHidden(t *testing.T) {
	const token = "tok-0149-of-a-failed-login"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, `{"token":%q,"status":"bad"}`, token)
	}))
	defer srv.Close()
	for name, step := range map[string]string{
		"check fails":   `capture: {token: {json: token, secret: true}}` + "\n        expect: {json: {status: ok}}",
		"capture fails": `capture: {missing: {json: nowhere}, token: {json: token, secret: true}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.failures.jsonl")
			log, err := metrics.OpenFailureLog(path, 3)
			if err != nil {
				t.Fatal(err)
			}
			u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - name: login
        post: /login
        `+step+`
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
			rec.Configure(metrics.ErrorOptions{Failures: log, Redact: u.prog.Plan.Redact}) // as run.Run does
			u.Iterate(sc, time.Time{}, Stop{Soft: make(chan struct{})})
			data := readSamples(t, log, path)
			if strings.Count(data, "\n") != 1 || !strings.Contains(data, `\"status\":\"bad\"`) {
				t.Fatalf("want one sample with the answer, got:\n%s", data)
			}
			if strings.Contains(data, "tok-0149") {
				t.Errorf("the token leaked into the sample:\n%s", data)
			}
			for _, v := range u.env.Captures {
				if v != "" {
					t.Errorf("the failed step kept a capture: %q", v)
				}
			}
		})
	}
}

// A failure sample keeps a body's first KiB: a secret the cut goes through
// keeps no part of it, whether the run noted it (a secret capture) or the
// plan took it from the environment.
func TestFailureSampleCutInsideASecretHidesItsStart(t *testing.T) {
	const token, pass = "tok-straddling-the-cut-0149", "pass-word-from-env-42"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/login":
			fmt.Fprintf(w, `{"token":%q}`, token)
		case "/a": // 10 bytes of the token before the cut
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, strings.Repeat("x", metrics.SampleResponseBody-10)+token+" and more")
		case "/b": // 12 bytes of the password before the cut
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, strings.Repeat("y", metrics.SampleResponseBody-12)+pass+" and more")
		}
	}))
	defer srv.Close()
	env := map[string]string{"PASS": pass}
	p, err := plan.Parse("t.yaml", []byte(`target: `+srv.URL+`
scenarios:
  s:
    steps:
      - {name: login, post: /login, capture: {token: {json: token, secret: true}}}
      - {name: a, get: /a, headers: {X-Token: "{{ token }}"}}
  t:
    steps:
      - {name: b, get: /b, headers: {X-Pass: "${PASS}"}}
load: {stages: [{duration: 1s, users: 1}]}
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, srv.URL, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.failures.jsonl")
	log, err := metrics.OpenFailureLog(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	rec.Configure(metrics.ErrorOptions{Failures: log, Redact: p.Redact}) // as run.Run does
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{}).NewTransport(), rec)
	defer u.Close()
	for _, sc := range prog.Scenarios { // a failed step ends its iteration
		u.Iterate(sc, time.Time{}, Stop{Soft: make(chan struct{})})
	}
	data := readSamples(t, log, path)
	if strings.Count(data, "\n") != 2 {
		t.Fatalf("want the samples of a and b, got:\n%s", data)
	}
	for _, part := range []string{token[:10], pass[:12]} {
		if strings.Contains(data, part) {
			t.Errorf("%q, the start of a secret, is in the samples:\n%s", part, data)
		}
	}
	if !strings.Contains(data, `x[redacted]…"`) || !strings.Contains(data, `y[redacted]…"`) {
		t.Errorf("want the cut bodies to end in [redacted]…, got:\n%s", data)
	}
}
