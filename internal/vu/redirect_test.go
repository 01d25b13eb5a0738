package vu

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/result"
)

func TestRedirectMethodTable(t *testing.T) {
	for _, c := range []struct {
		status   int
		method   string
		want     string
		keepBody bool
	}{
		{303, "POST", "GET", false},
		{303, "PUT", "GET", false},
		{303, "DELETE", "GET", false},
		{303, "GET", "GET", true},
		{303, "HEAD", "HEAD", true},
		{302, "POST", "GET", false},
		{301, "POST", "GET", false},
		{302, "PUT", "PUT", true},
		{301, "DELETE", "DELETE", true},
		{302, "GET", "GET", true},
		{307, "POST", "POST", true},
		{308, "POST", "POST", true},
		{307, "PATCH", "PATCH", true},
	} {
		m, keep := redirectMethod(c.status, c.method)
		if m != c.want || keep != c.keepBody {
			t.Errorf("%d after %s: %s (body kept %v), want %s (%v)", c.status, c.method, m, keep, c.want, c.keepBody)
		}
	}
}

// seen is what a redirecting test server was sent, in order.
type seen struct {
	mu  sync.Mutex
	log []string
}

func (s *seen) add(r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf("%s %s cookie=%q auth=%q body=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Cookie"), r.Header.Get("Authorization"), b))
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// loginServer answers POST /login with a 302 to /dashboard that sets the
// session cookie, /dashboard only with that cookie, POST /vote with a 303
// to /thanks, /loop with a 302 to itself and /bad with a Location that
// is no URL.
func loginServer(t *testing.T) (*httptest.Server, *seen) {
	s := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r)
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/"})
			http.Redirect(w, r, "/dashboard", http.StatusFound)
		case "/dashboard":
			if c, err := r.Cookie("sid"); err != nil || c.Value != "s3cret" {
				http.Error(w, "no session", http.StatusUnauthorized)
				return
			}
			io.WriteString(w, "welcome")
		case "/vote":
			http.Redirect(w, r, "thanks?x=1", http.StatusSeeOther)
		case "/keep":
			http.Redirect(w, r, "/echo", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/bad":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	return srv, s
}

func iterateN(u *User, sc *Scenario, n int) {
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < n; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
}

func stepNamed(t *testing.T, rec *metrics.Recorder, name string) result.Step {
	t.Helper()
	for _, st := range rec.Snapshot().Steps {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no step %q", name)
	return result.Step{}
}

// A login that answers 302 with its cookie reaches the dashboard with it:
// each hop a request of the step, with its status, and the checks see the
// last answer. The 303 after a POST is a GET without the body.
func TestRedirectsFollowedWithTheJarAndCounted(t *testing.T) {
	srv, s := loginServer(t)
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: login, post: /login, form: {user: ann}, expect: {status: 200, body_contains: welcome}}
      - {name: vote, post: /vote, json: {choice: 1}, expect: {status: 200}}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 3)
	// The step's row holds its final answers, one an iteration; its hops
	// are the hop row's, and the run counts both.
	for _, c := range []struct{ name, hop string }{{"login", "302"}, {"vote", "303"}} {
		st := stepNamed(t, rec, c.name)
		if st.Requests != 3 || st.Failed != 0 || st.Statuses["200"] != 3 || len(st.Statuses) != 1 {
			t.Errorf("%s: %d requests, %d failed (%v), statuses %v; want 3 answers of 200", c.name, st.Requests, st.Failed, st.Errors, st.Statuses)
		}
		hop := stepNamed(t, rec, HopRowName(c.name))
		if hop.Requests != 3 || hop.Failed != 0 || hop.Statuses[c.hop] != 3 || len(hop.Statuses) != 1 {
			t.Errorf("%s: %d requests, %d failed, statuses %v; want 3 %ss", hop.Name, hop.Requests, hop.Failed, hop.Statuses, c.hop)
		}
	}
	if tot := rec.Snapshot().Totals; tot.Requests != 12 || tot.Failed != 0 {
		t.Errorf("run: %d requests, %d failed; want the server's 12", tot.Requests, tot.Failed)
	}
	log := s.all()
	want := []string{
		`POST /login cookie="" auth="" body="user=ann"`,
		`GET /dashboard cookie="sid=s3cret" auth="" body=""`,
		`POST /vote cookie="sid=s3cret" auth="" body="{\"choice\":1}"`,
		`GET /thanks?x=1 cookie="sid=s3cret" auth="" body=""`,
	}
	if len(log) != 12 || strings.Join(log[:4], "\n") != strings.Join(want, "\n") {
		t.Errorf("the server saw (%d):\n%s\nwant 12, starting\n%s", len(log), strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// A 307 keeps the method and the body.
func TestRedirect307KeepsMethodAndBody(t *testing.T) {
	srv, s := loginServer(t)
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: keep, put: /keep, body: "payload", expect: {status: 200}}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 1)
	log := s.all()
	if len(log) != 2 || log[1] != `PUT /echo cookie="" auth="" body="payload"` {
		t.Errorf("the server saw %q", log)
	}
	if st := stepNamed(t, rec, "keep"); st.Requests != 1 || st.Failed != 0 || st.Statuses["200"] != 1 {
		t.Errorf("%d requests, %d failed, %v", st.Requests, st.Failed, st.Statuses)
	}
	if st := stepNamed(t, rec, HopRowName("keep")); st.Requests != 1 || st.Statuses["307"] != 1 {
		t.Errorf("hops: %d requests, %v", st.Requests, st.Statuses)
	}
}

// A loop ends at the limit: the hops are counted as the requests they
// were, under the hop row, and the answer that would go past the limit
// is the step's, failed as redirects: a step that fails every iteration
// has an error rate of 100 %, however many hops it made.
func TestRedirectLoopEndsAtTheLimitAsRedirects(t *testing.T) {
	srv, s := loginServer(t)
	u, sc, rec := recUserFor(t, `
http: {redirects: 5}
scenarios:
  s:
    steps:
      - {name: loop, get: /loop, redirects: 3}
      - {name: loop5, get: /loop}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 2)
	st := stepNamed(t, rec, "loop")
	if st.Requests != 2 || st.Failed != 2 || st.ByClass["redirects"] != 2 {
		t.Errorf("loop: %d requests, %d failed %v, statuses %v; want 2, both redirects", st.Requests, st.Failed, st.ByClass, st.Statuses)
	}
	if hop := stepNamed(t, rec, HopRowName("loop")); hop.Requests != 6 || hop.Failed != 0 || hop.Statuses["302"] != 6 {
		t.Errorf("loop's hops: %d requests, %d failed, statuses %v; want 6 (2 × 3) 302s", hop.Requests, hop.Failed, hop.Statuses)
	}
	if tot := rec.Snapshot().Totals; tot.Requests != 8 {
		t.Errorf("run: %d requests, want the server's 8", tot.Requests)
	}
	if len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Message, "after 3 redirects") {
		t.Errorf("errors %+v", st.Errors)
	}
	// The failed step ends the iteration, so loop5 never ran.
	if n := len(s.all()); n != 8 {
		t.Errorf("the server saw %d requests, want 8", n)
	}
	if st := stepNamed(t, rec, "loop5"); st.Requests != 0 {
		t.Errorf("loop5 ran %d requests after a failed step", st.Requests)
	}
}

// redirects: 0 measures the 3xx itself; the plan-wide limit applies where
// a step sets none.
func TestRedirectsOff(t *testing.T) {
	srv, s := loginServer(t)
	u, sc, rec := recUserFor(t, `
http: {redirects: 0}
scenarios:
  s:
    steps:
      - {name: login, post: /login, expect: {status: 302}}
      - {name: loop, get: /loop, redirects: 1}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 1)
	if st := stepNamed(t, rec, "login"); st.Requests != 1 || st.Failed != 0 {
		t.Errorf("login: %d requests, %d failed", st.Requests, st.Failed)
	}
	if st := stepNamed(t, rec, "loop"); st.Requests != 1 || st.ByClass["redirects"] != 1 {
		t.Errorf("loop: %d requests, %v", st.Requests, st.ByClass)
	}
	// A step that follows none has no hop row; one whose hops were never
	// made shows none either.
	for _, st := range rec.Snapshot().Steps {
		if st.Name == HopRowName("login") || st.Name == HopRowName("bad") {
			t.Errorf("a hop row %q with %d requests", st.Name, st.Requests)
		}
	}
	if n := len(s.all()); n != 3 {
		t.Errorf("the server saw %d requests, want 3", n)
	}
}

// A Location that is no URL fails as redirects, naming it.
func TestRedirectUnreadableLocation(t *testing.T) {
	srv, _ := loginServer(t)
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: bad, get: /bad}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 1)
	st := stepNamed(t, rec, "bad")
	if st.Requests != 1 || st.ByClass["redirects"] != 1 || len(st.Errors) != 1 || !strings.Contains(st.Errors[0].Message, `"http://[::1"`) {
		t.Errorf("bad: %d requests, %v, %+v", st.Requests, st.ByClass, st.Errors)
	}
}

// A redirect to another origin goes there with the jar's cookies for it
// and without the Authorization meant for the first host.
func TestRedirectCrossOriginDropsAuthorization(t *testing.T) {
	other, s := loginServer(t)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/echo", http.StatusFound)
	}))
	t.Cleanup(first.Close)
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: go, get: /, headers: {Authorization: Bearer t0ken, Cookie: theme=dark, X-Keep: yes}, expect: {status: 200}}
load: {stages: [{duration: 1s, users: 1}]}
`, first.URL, metrics.ErrorOptions{})
	iterateN(u, sc, 1)
	log := s.all()
	if len(log) != 1 || log[0] != `GET /echo cookie="" auth="" body=""` {
		t.Errorf("the other origin saw %q", log)
	}
	if st := stepNamed(t, rec, "go"); st.Requests != 1 || st.Failed != 0 {
		t.Errorf("%d requests, %d failed %+v", st.Requests, st.Failed, st.Errors)
	}
	if st := stepNamed(t, rec, HopRowName("go")); st.Requests != 1 || st.Statuses["302"] != 1 {
		t.Errorf("hops: %d requests, %v", st.Requests, st.Statuses)
	}
}

// A hop to the same host keeps the step's own Cookie header beside the
// jar's (Go's client and k6 keep it); the host is compared without case
// and without the scheme's default port, so such a hop also keeps
// Authorization.
func TestRedirectSameHostKeepsExplicitCookie(t *testing.T) {
	var mu sync.Mutex
	var log []string
	var port string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		log = append(log, fmt.Sprintf("%s cookie=%q auth=%q", r.URL.Path, strings.Join(r.Header.Values("Cookie"), "; "), r.Header.Get("Authorization")))
		self := port
		mu.Unlock()
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "s3cret", Path: "/"})
			http.Redirect(w, r, "/dashboard", http.StatusFound)
		case "/dashboard":
			// Another spelling of the same host.
			w.Header().Set("Location", "http://LocalHost:"+self+"/end")
			w.WriteHeader(http.StatusFound)
		default:
			io.WriteString(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	mu.Lock()
	_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	mu.Unlock()
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: in, get: /login, headers: {Cookie: theme=dark, Authorization: Bearer t0ken}, expect: {status: 200}}
load: {stages: [{duration: 1s, users: 1}]}
`, "http://localhost:"+port, metrics.ErrorOptions{})
	iterateN(u, sc, 1)
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		`/login cookie="theme=dark" auth="Bearer t0ken"`,
		`/dashboard cookie="theme=dark; sid=s3cret" auth="Bearer t0ken"`,
		`/end cookie="theme=dark; sid=s3cret" auth="Bearer t0ken"`,
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server saw\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if st := stepNamed(t, rec, "in"); st.Requests != 1 || st.Failed != 0 {
		t.Errorf("%d requests, %d failed %+v", st.Requests, st.Failed, st.Errors)
	}
}

func TestCanonicalHost(t *testing.T) {
	for _, c := range [][3]string{
		{"http", "Example.COM:80", "example.com"},
		{"https", "example.com:443", "example.com"},
		{"http", "example.com:443", "example.com:443"},
		{"https", "[::1]:8443", "[::1]:8443"},
	} {
		if got := canonicalHost(c[0], c[1]); got != c[2] {
			t.Errorf("%s %s: %s, want %s", c[0], c[1], got, c[2])
		}
	}
}
