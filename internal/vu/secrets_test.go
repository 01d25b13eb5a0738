package vu

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
