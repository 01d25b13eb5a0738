package vu

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/plan/lang"
)

// signServer answers GET /token with a JSON token and a header, and
// POST /signed with 200 when X-Signature is the HMAC-SHA256 of the body
// under the key "k3y", else 401. It counts both outcomes.
func signServer(t testing.TB) (string, *atomic.Int64, *atomic.Int64) {
	var good, bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			w.Header().Set("X-Nonce", "n-42")
			io.WriteString(w, `{"token":"t-`+r.URL.Query().Get("u")+`"}`)
		case "/signed":
			body, _ := io.ReadAll(r.Body)
			m := hmac.New(sha256.New, []byte("k3y"))
			m.Write(body)
			if hex.EncodeToString(m.Sum(nil)) != r.Header.Get("X-Signature") || r.Header.Get("X-Nonce") != "n-42" {
				bad.Add(1)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			good.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &good, &bad
}

const signPlan = `vars: {key: k3y}
scenarios:
  s:
    steps:
      - get: /token?u={{ vu }}
        capture: {token: {json: token}}
      - name: sign
        sets: [payload, sig]
        script: |
          const payload = JSON.stringify({token: captures.token, status: response.status});
          set("payload", payload);
          set("sig", hmac_sha256(vars.key, payload));
          header("X-Nonce", response.headers["x-nonce"]);
      - post: /signed
        headers: {X-Signature: "{{ sig }}"}
        body: "{{ payload }}"
        expect: {status: 200}
`

// TestScriptSignsNextRequest: a script reads a capture, a var and the
// last response, sets captures the next request's templates use and a
// header for that request only; the server checks the HMAC.
func TestScriptSignsNextRequest(t *testing.T) {
	base, good, bad := signServer(t)
	u, sc, rec := bodyUser(t, t.TempDir(), signPlan, base, httpc.Options{})
	iterate(t, u, sc, 5)
	if good.Load() != 5 || bad.Load() != 0 {
		t.Fatalf("server checked %d signatures good and %d bad, want 5 and 0", good.Load(), bad.Load())
	}
	for _, st := range rec.Snapshot().Steps {
		if st.Failed != 0 {
			t.Errorf("step %s: %d failed %v", st.Name, st.Failed, st.ByClass)
		}
	}
	if len(u.script.headers) != 0 {
		t.Fatalf("script headers outlived their request: %v", u.script.headers)
	}
	if got := u.env.Captures[sc.Steps[1].Script.Sets["payload"]]; got != `{"token":"t-1","status":200}` {
		t.Fatalf("payload capture %q", got)
	}
}

// TestScriptFailures: fail(), a throw and a set() of an undeclared name
// each fail the step as a check, counted against the request step after
// the script, with the script's message; the request is not sent.
func TestScriptFailures(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{`fail("token " + captures.token + " looks wrong")`, "check: token t-1 looks wrong"},
		{`if (response.status === 200) throw new Error("boom")`, "Error: boom (at "},
		{`set("nope", "x")`, `set("nope")`},
		{`captures.token = "x"`, "captures are read-only"},
		{`undeclared = 1`, "ReferenceError: undeclared is not defined"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			base, good, bad := signServer(t)
			plan := strings.Replace(signPlan, `header("X-Nonce", response.headers["x-nonce"]);`,
				`header("X-Nonce", response.headers["x-nonce"]);`+"\n          "+tc.script+";", 1)
			u, sc, rec := bodyUser(t, t.TempDir(), plan, base, httpc.Options{})
			iterate(t, u, sc, 3)
			if good.Load()+bad.Load() != 0 {
				t.Fatalf("the request after a failed script was sent %d times", good.Load()+bad.Load())
			}
			steps := rec.Snapshot().Steps
			if len(steps) != 2 {
				t.Fatalf("%d metric steps, want 2 (scripts have none of their own)", len(steps))
			}
			post := steps[1]
			if post.Failed != 3 || post.ByClass["check"] != 3 {
				t.Fatalf("POST step: %d failed %v, want 3 check", post.Failed, post.ByClass)
			}
			msg := post.Errors[0].Message
			if strings.Contains(tc.script, "throw") && !strings.HasSuffix(msg, "p.yaml:15:46)") {
				// The throw's place in the plan: line 15, at "new Error".
				t.Fatalf("message %q does not end with the throw's place in the plan, p.yaml:15:46", msg)
			}
			if !strings.Contains(msg, "sign: ") || !strings.Contains(msg, strings.TrimPrefix(tc.want, "check: ")) {
				t.Fatalf("message %q, want it to name the step and contain %q", msg, tc.want)
			}
			if len(u.script.headers) != 0 {
				// header() ran before the failure; the failed iteration
				// must not leak it into the next one's first request.
				t.Fatalf("pending headers after a failed script: %v", u.script.headers)
			}
		})
	}
}

// TestScriptBeforeAnyRequest sees no response: status 0, empty body.
func TestScriptBeforeAnyRequest(t *testing.T) {
	base, good, _ := signServer(t)
	u, sc, rec := bodyUser(t, t.TempDir(), `vars: {key: k3y}
scenarios:
  s:
    steps:
      - sets: [payload, sig]
        script: |
          if (response.status !== 0 || response.body !== "") fail("saw a response: " + response.status);
          set("payload", "{}");
          set("sig", hmac_sha256(vars.key, "{}"));
          header("X-Nonce", "n-42");
      - post: /signed
        headers: {X-Signature: "{{ sig }}"}
        body: "{{ payload }}"
        expect: {status: 200}
`, base, httpc.Options{})
	iterate(t, u, sc, 3)
	if good.Load() != 3 {
		t.Fatalf("server saw %d good signatures, want 3: %v", good.Load(), rec.Snapshot().Steps[0].Errors)
	}
}

// TestScriptEndlessLoopStopped: a script that never returns is stopped by
// the watchdog and fails its step; the runtime is usable afterwards.
func TestScriptEndlessLoopStopped(t *testing.T) {
	defer lang.ScriptTimeLimit.Store(lang.ScriptTimeLimit.Load())
	lang.ScriptTimeLimit.Store(int64(200 * time.Millisecond))
	base, good, _ := signServer(t)
	plan := strings.Replace(signPlan, `header("X-Nonce", response.headers["x-nonce"]);`,
		`header("X-Nonce", response.headers["x-nonce"]);`+"\n          if (captures.token === \"t-1\" && vars.key === \"loop\") for (;;) {}", 1)
	u, sc, rec := bodyUser(t, t.TempDir(), strings.Replace(plan, "key: k3y", "key: loop", 1), base, httpc.Options{})
	iterate(t, u, sc, 1)
	post := rec.Snapshot().Steps[1]
	if post.ByClass["check"] != 1 || !strings.Contains(post.Errors[0].Message, "ran longer than 200ms") {
		t.Fatalf("endless script: %v %v", post.ByClass, post.Errors)
	}
	// The same runtimes then run a script that ends, normally.
	u2, sc2, rec2 := bodyUser(t, t.TempDir(), signPlan, base, httpc.Options{})
	iterate(t, u2, sc2, 2)
	if good.Load() != 2 || rec2.Snapshot().Steps[1].Failed != 0 {
		t.Fatalf("after an interrupted script: %d signed requests, %v", good.Load(), rec2.Snapshot().Steps[1].ByClass)
	}
}
