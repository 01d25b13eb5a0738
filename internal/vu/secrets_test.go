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

	"github.com/stampede-load/stampede/internal/metrics"
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
