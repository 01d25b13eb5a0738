package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// loginApp is a site whose login redirects: POST /login answers 302 to
// /dashboard with the session cookie, /dashboard answers only with that
// cookie, and POST /vote answers 303 to /thanks, which must come as a
// GET without the vote's body. Every request is counted by what it was.
func loginApp(t *testing.T) (http.Handler, *counter) {
	c := newCounter("POST /login", "GET /dashboard", "POST /vote", "GET /thanks", "GET /loop", "wrong")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.Path
		switch key {
		case "POST /login":
			c.add(key)
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/"})
			http.Redirect(w, r, "/dashboard", http.StatusFound)
		case "GET /dashboard":
			if ck, err := r.Cookie("sid"); err != nil || ck.Value != "s3cret" || len(body) > 0 {
				c.add("wrong")
				http.Error(w, "no session", http.StatusUnauthorized)
				return
			}
			c.add(key)
			io.WriteString(w, "welcome")
		case "POST /vote":
			c.add(key)
			http.Redirect(w, r, "/thanks", http.StatusSeeOther)
		case "GET /thanks":
			if len(body) > 0 || r.Header.Get("Content-Type") != "" {
				c.add("wrong")
				http.Error(w, "a body on a GET", http.StatusBadRequest)
				return
			}
			c.add(key)
			io.WriteString(w, "thanks")
		case "GET /loop":
			c.add(key)
			http.Redirect(w, r, "loop", http.StatusFound)
		default:
			c.add("wrong")
			http.NotFound(w, r)
		}
	})
	return h, c
}

const loginFlow = `
scenarios:
  s:
    steps:
      - {name: login, post: /login, form: {user: ann}, expect: {status: 200, body_contains: welcome}}
      - {name: vote, post: /vote, json: {choice: 1}, expect: {status: 200, body_contains: thanks}}
      - think: 10ms
load: {stages: [{duration: 1s, users: 2}]}
`

// checkLoginFlow: each step's row holds its final answers (a 200 an
// iteration), each hop is counted with its status under the step's hop
// row, the rows equal what the server was sent, and nothing failed.
func checkLoginFlow(t *testing.T, res *result.Result, c *counter) {
	t.Helper()
	checkSums(t, res)
	if c.get("POST /login") == 0 || c.get("wrong") != 0 {
		t.Fatalf("the server saw %d logins, %d wrong requests", c.get("POST /login"), c.get("wrong"))
	}
	for _, f := range []struct{ step, first, final, hopStatus string }{
		{"login", "POST /login", "GET /dashboard", "302"},
		{"vote", "POST /vote", "GET /thanks", "303"},
	} {
		st, hop := stepOf(t, res, "s", f.step), stepOf(t, res, "s", f.step+" ↪ redirect")
		if st.Requests != c.get(f.final) || st.Failed != 0 || st.Statuses["200"] != st.Requests || len(st.Statuses) != 1 {
			t.Errorf("%s: %d requests, %d failed, statuses %v; the server saw %d %s", f.step, st.Requests, st.Failed, st.Statuses, c.get(f.final), f.final)
		}
		if hop.Requests != c.get(f.first) || hop.Failed != 0 || hop.Statuses[f.hopStatus] != hop.Requests {
			t.Errorf("%s: %d requests, %d failed, statuses %v; the server saw %d %s", hop.Name, hop.Requests, hop.Failed, hop.Statuses, c.get(f.first), f.first)
		}
	}
	served := c.get("POST /login") + c.get("GET /dashboard") + c.get("POST /vote") + c.get("GET /thanks")
	if res.Totals.Requests != served || res.Totals.Failed != 0 {
		t.Errorf("run: %d requests, %d failed %v; the server served %d", res.Totals.Requests, res.Totals.Failed, res.Totals.ByClass, served)
	}
}

// TestRedirectingLoginFlow: a login answered 302 with its cookie, then a
// POST answered 303, run through the binary: every hop followed with
// the jar, counted under its step, and no failure.
func TestRedirectingLoginFlow(t *testing.T) {
	t.Parallel()
	h, c := loginApp(t)
	srv := httpServer(t, h)
	out := filepath.Join(t.TempDir(), "r.json")
	plan := e2etest.WritePlan(t, "target: "+srv.URL+"\n"+loginFlow, nil)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "--engine", "goroutines")
	if o.Code != 0 {
		t.Fatalf("%s", o)
	}
	checkLoginFlow(t, e2etest.ReadResult(t, out), c)
}

// TestLoopFollowsSameOriginRedirects: the event loop follows a redirect
// to the step's own origin as the goroutines do, hop by hop with the
// user's cookies, counted alike; one to another origin (the loop dials
// its one address) fails as class redirects saying so, never taken for
// the step's answer; with redirects: 0 the 302 is the answer on both.
func TestLoopFollowsSameOriginRedirects(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the event-loop engine is Linux's")
	}
	const flow = `
scenarios:
  s:
    steps:
      - {name: login, post: /login, form: {user: ann}, expect: {status: 200}}
      - {name: vote, post: /vote, json: {choice: 1}, expect: {status: 200}}
load: {stages: [{duration: 500ms, users: 2}]}
`
	for _, engine := range []string{"loop", "goroutines"} {
		h, c := loginApp(t)
		srv := httpServer(t, h)
		res := runEngine(t, "target: "+srv.URL+"\n"+flow, engine)
		checkLoginFlow(t, res, c)
	}
	for _, engine := range []string{"loop", "goroutines"} {
		h, c := loginApp(t)
		srv := httpServer(t, h)
		res := runEngine(t, "target: "+srv.URL+"\nscenarios: {s: {steps: [{name: loop, get: /loop, redirects: 3}]}}\nload: {stages: [{duration: 300ms, users: 2}]}\n", engine)
		st, hop := stepOf(t, res, "s", "loop"), stepOf(t, res, "s", "loop ↪ redirect")
		// Each iteration: 3 hops, then the 4th answer, the step's, a
		// failure (a 302 past the limit).
		if st.Requests == 0 || st.Requests != st.ByClass["redirects"] || st.Failed != st.Requests || hop.Requests != 3*st.Requests ||
			hop.Statuses["302"] != hop.Requests || st.Requests+hop.Requests != c.get("GET /loop") || res.Totals.Requests != c.get("GET /loop") {
			t.Errorf("%s, a loop: step %d requests %v, hops %d %v, run %d; the server saw %d", engine, st.Requests, st.ByClass, hop.Requests, hop.Statuses, res.Totals.Requests, c.get("GET /loop"))
		}
	}
	other := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "elsewhere") }))
	away := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/x", http.StatusFound)
	}))
	const hop = `
scenarios:
  s:
    steps:
      - {name: away, get: /, expect: {status: 200}}
load: {stages: [{duration: 300ms, users: 1}]}
`
	res := runEngine(t, "target: "+away.URL+"\n"+hop, "loop")
	st := stepOf(t, res, "s", "away")
	if st.Requests == 0 || st.ByClass["redirects"] != st.Requests || len(st.Errors) == 0 || !strings.Contains(st.Errors[0].Message, "only to the step's own origin") {
		t.Errorf("loop, cross-origin: %d requests, %v, %+v", st.Requests, st.ByClass, st.Errors)
	}
	if !hasIndicator(res, "loop_cross_origin") {
		t.Errorf("loop, cross-origin: no loop_cross_origin warning naming --engine goroutines in %+v", res.Indicators)
	}
	res = runEngine(t, "target: "+away.URL+"\n"+hop, "goroutines")
	if st, hop := stepOf(t, res, "s", "away"), stepOf(t, res, "s", "away ↪ redirect"); st.Requests == 0 || st.Failed != 0 || st.Statuses["200"] != st.Requests || hop.Statuses["302"] != st.Requests {
		t.Errorf("goroutines, cross-origin: %d requests, %d failed, %v; hops %v", st.Requests, st.Failed, st.Statuses, hop.Statuses)
	}
	for _, engine := range []string{"loop", "goroutines"} {
		h, c := loginApp(t)
		srv := httpServer(t, h)
		res := runEngine(t, "target: "+srv.URL+"\nhttp: {redirects: 0}\n"+strings.Replace(hop, "get: /, expect: {status: 200}", "post: /login, expect: {status: 302}", 1), engine)
		st := stepOf(t, res, "s", "away")
		if st.Requests == 0 || st.Requests != c.get("POST /login") || st.Failed != 0 || c.get("GET /dashboard") != 0 {
			t.Errorf("%s, redirects 0: %d requests, %d failed; the server saw %d logins, %d dashboards", engine, st.Requests, st.Failed, c.get("POST /login"), c.get("GET /dashboard"))
		}
	}
}

// runEngine runs a plan on one engine and reads its result, which must
// say that engine ran it.
func runEngine(t *testing.T, yaml, engine string) *result.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", e2etest.WritePlan(t, yaml, nil), "-o", out, "--engine", engine)
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("%s: no result: %s", engine, o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Run.Engine != engine {
		t.Fatalf("ran on %q, want %s\n%s", res.Run.Engine, engine, o)
	}
	return res
}

// TestRedirectLoopFailsItsStepThreshold: a step whose every iteration
// ends past the redirect limit has an error rate of 100 %, so its
// threshold fails the run; its hops, served by the server, stay in the
// run's totals under the hop row.
func TestRedirectLoopFailsItsStepThreshold(t *testing.T) {
	t.Parallel()
	h, c := loginApp(t)
	srv := httpServer(t, h)
	out := filepath.Join(t.TempDir(), "r.json")
	plan := e2etest.WritePlan(t, "target: "+srv.URL+`
scenarios: {s: {steps: [{get: /loop}]}}
load: {stages: [{duration: 300ms, users: 1}]}
thresholds: ["GET /loop: error_rate < 10%"]
`, nil)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out, "--engine", "goroutines")
	if o.Code != 1 {
		t.Fatalf("exit %d, want 1 (the step's threshold fails)\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	st, hop := stepOf(t, res, "s", "GET /loop"), stepOf(t, res, "s", "GET /loop ↪ redirect")
	if st.Requests == 0 || st.Failed != st.Requests || hop.Requests != 10*st.Requests || res.Totals.Requests != c.get("GET /loop") {
		t.Errorf("step %d requests, %d failed; hops %d; run %d; the server saw %d", st.Requests, st.Failed, hop.Requests, res.Totals.Requests, c.get("GET /loop"))
	}
}

// TestURLRedirectsFlag: stampede url follows redirects by default, each
// hop counted under the hop row and the URL's row holding the final
// answers; --redirects 0 measures the 302 itself; a negative count is a
// usage error.
func TestURLRedirectsFlag(t *testing.T) {
	t.Parallel()
	var hops, ends atomic.Int64
	srv := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/end" {
			ends.Add(1)
			io.WriteString(w, "end")
			return
		}
		hops.Add(1)
		http.Redirect(w, r, "/end", http.StatusFound)
	}))
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "url", "-d", "300ms", "-c", "2", "-o", out, srv.URL+"/hop")
	if o.Code != 0 {
		t.Fatalf("%s", o)
	}
	res := e2etest.ReadResult(t, out)
	st, hop := stepOf(t, res, "url", "GET "+srv.URL+"/hop"), stepOf(t, res, "url", "GET "+srv.URL+"/hop ↪ redirect")
	if st.Requests == 0 || st.Failed != 0 || st.Statuses["200"] != st.Requests || st.Requests != ends.Load() ||
		hop.Statuses["302"] != hop.Requests || hop.Requests != hops.Load() || res.Totals.Requests != ends.Load()+hops.Load() {
		t.Errorf("engine %s: %d requests, %d failed %v, statuses %v; hops %v; run %d; the server saw %d 302s and %d 200s", res.Run.Engine, st.Requests, st.Failed, st.ByClass, st.Statuses, hop.Statuses, res.Totals.Requests, hops.Load(), ends.Load())
	}
	o = e2etest.Stampede(t, 60*time.Second, "", "url", "-d", "300ms", "-c", "2", "--redirects", "0", "-o", out, srv.URL+"/hop")
	if o.Code != 0 {
		t.Fatalf("--redirects 0: %s", o)
	}
	res = e2etest.ReadResult(t, out)
	if st := stepOf(t, res, "url", "GET "+srv.URL+"/hop"); st.Requests == 0 || st.Failed != 0 || st.Statuses["302"] != st.Requests || len(res.Steps) != 1 {
		t.Errorf("--redirects 0: %d requests, %d failed, statuses %v, %d rows", st.Requests, st.Failed, st.Statuses, len(res.Steps))
	}
	if o := e2etest.Stampede(t, 60*time.Second, "", "url", "-d", "300ms", "--redirects", "-1", srv.URL); o.Code != 2 || !strings.Contains(o.Stderr, "--redirects") {
		t.Errorf("--redirects -1: %s", o)
	}
}

func hasIndicator(res *result.Result, id string) bool {
	for _, ind := range res.Indicators {
		if ind.ID == id && strings.Contains(ind.Message, "--engine goroutines") {
			return true
		}
	}
	return false
}
