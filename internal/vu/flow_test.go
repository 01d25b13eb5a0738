package vu

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// authServer is a loopback server with a login whose first token per user
// expires after firstUses requests (0: never), and counters by path.
type authServer struct {
	mu        sync.Mutex
	firstUses int
	logins    map[string]int
	tokens    map[string]int // uses left; -1 unlimited
	hits      map[string]int
	url       string
}

func newAuthServer(t *testing.T, firstUses int) *authServer {
	a := &authServer{firstUses: firstUses, logins: map[string]int{}, tokens: map[string]int{}, hits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

func (a *authServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hits[r.Method+" "+r.URL.Path]++
	switch r.URL.Path {
	case "/login":
		user := r.URL.Query().Get("user")
		a.logins[user]++
		tok := fmt.Sprintf("%s-%d", user, a.logins[user])
		a.tokens[tok] = -1
		if a.logins[user] == 1 && a.firstUses > 0 {
			a.tokens[tok] = a.firstUses
		}
		fmt.Fprintf(w, `{"token":%q}`, tok)
	case "/signed":
		m := hmac.New(sha256.New, []byte("k3y"))
		m.Write(body)
		if r.Header.Get("X-Signature") != hex.EncodeToString(m.Sum(nil)) {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Write([]byte(`{}`))
	default:
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		left, ok := a.tokens[tok]
		if !ok || left == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if left > 0 {
			a.tokens[tok] = left - 1
		}
		w.Write([]byte(`{"ids":["a1","a2","a3"],"flag":"on"}`))
	}
}

func (a *authServer) hit(key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[key]
}

// flowUsers compiles yaml against base and makes n users on one recorder.
func flowUsers(t *testing.T, yaml, base string, n int) (*Program, []*User, *metrics.Recorder) {
	t.Helper()
	p, err := plan.Parse("t.yaml", []byte("target: "+base+"\n"+yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	shared := httpc.NewShared(httpc.Options{})
	var us []*User
	for i := 1; i <= n; i++ {
		u := prog.NewUser(int64(i), shared.NewTransport(), rec)
		t.Cleanup(u.Close)
		us = append(us, u)
	}
	return prog, us, rec
}

func runIters(t *testing.T, u *User, sc *Scenario, times int) {
	t.Helper()
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < times; i++ {
		if err := u.Iterate(sc, time.Time{}, stop); err != nil {
			t.Fatal(err)
		}
	}
}

func stepCount(rec *metrics.Recorder, name string) (requests, failed int64) {
	for _, s := range rec.Snapshot().Steps {
		if s.Name == name {
			return s.Requests, s.Failed
		}
	}
	return -1, -1
}

const loginPlan = `
scenarios:
  shopper:
    once:
      - name: login
        post: /login?user=u{{ vu }}
        capture: {token: {json: token}}
    renew_on: 401
    steps:
      - name: items
        get: /items
        headers: {Authorization: "Bearer {{ token }}"}
        expect: {status: 200}
load: {stages: [{duration: 1s, users: 3}]}
`

// Once steps run once per user however many iterations follow.
func TestOnceRunsOncePerUser(t *testing.T) {
	srv := newAuthServer(t, 0)
	prog, us, rec := flowUsers(t, loginPlan, srv.url, 3)
	for _, u := range us {
		runIters(t, u, prog.ScenarioFor(0), 25)
	}
	for i := 1; i <= 3; i++ {
		if n := srv.logins[fmt.Sprintf("u%d", i)]; n != 1 {
			t.Errorf("user %d logged in %d times, want 1", i, n)
		}
	}
	if req, failed := stepCount(rec, "items"); req != 75 || failed != 0 {
		t.Errorf("items: %d requests, %d failed; want 75, 0", req, failed)
	}
	if req, _ := stepCount(rec, "login"); req != 3 {
		t.Errorf("login recorded %d times, want 3", req)
	}
	if prog.Renewals() != 0 {
		t.Errorf("renewals = %d, want 0", prog.Renewals())
	}
}

// A token that expires mid-run is renewed once per user: the 401 makes
// the user log in again and retry the step, and the renewal is counted.
func TestRenewOn401OncePerUser(t *testing.T) {
	srv := newAuthServer(t, 5)
	prog, us, rec := flowUsers(t, loginPlan, srv.url, 3)
	for _, u := range us {
		runIters(t, u, prog.ScenarioFor(0), 12)
	}
	for i := 1; i <= 3; i++ {
		if n := srv.logins[fmt.Sprintf("u%d", i)]; n != 2 {
			t.Errorf("user %d logged in %d times, want 2 (one renewal)", i, n)
		}
	}
	if prog.Renewals() != 3 {
		t.Errorf("renewals = %d, want 3", prog.Renewals())
	}
	for _, u := range us {
		if u.flow.renewals != 1 {
			t.Errorf("user %d renewed %d times, want 1", u.ID, u.flow.renewals)
		}
	}
	// 12 answered items per user plus the one 401 that caused the renewal,
	// counted as the answer it was, not as a failure.
	if req, failed := stepCount(rec, "items"); req != 39 || failed != 0 {
		t.Errorf("items: %d requests, %d failed; want 39, 0", req, failed)
	}
	if got := srv.hit("GET /items"); got != 39 {
		t.Errorf("server saw %d item requests, want 39", got)
	}
}

// A 401 right after a renewal is a failure, not a loop of logins.
func TestRenewalDoesNotLoop(t *testing.T) {
	srv := newAuthServer(t, 0)
	yaml := strings.Replace(loginPlan, `"Bearer {{ token }}"`, `"Bearer wrong"`, 1)
	prog, us, rec := flowUsers(t, yaml, srv.url, 1)
	runIters(t, us[0], prog.ScenarioFor(0), 4)
	// Each iteration: 401, renewal (a login), retry, 401 recorded as a
	// failure.
	if req, failed := stepCount(rec, "items"); req != 8 || failed != 4 {
		t.Errorf("items: %d requests, %d failed; want 8, 4", req, failed)
	}
	if n := srv.logins["u1"]; n != 5 {
		t.Errorf("logins = %d, want 5", n)
	}
	if prog.Renewals() != 4 {
		t.Errorf("renewals = %d, want 4", prog.Renewals())
	}
}

const flowPlan = `
vars: {key: k3y}
scenarios:
  s:
    once:
      - post: /login?user=u{{ vu }}
        capture: {token: {json: token}}
    steps:
      - name: list
        get: /items
        headers: {Authorization: "Bearer {{ token }}"}
        capture: {ids: {json: ids}, flag: {json: flag}}
      - for_each: ids
        as: id
        steps:
          - name: item
            get: /items/{{ id }}
            headers: {Authorization: "Bearer {{ token }}"}
      - name: never
        get: /never
        if: flag == "off"
      - if: flag == "on" && status == 200
        steps:
          - name: guarded
            get: /guarded
            headers: {Authorization: "Bearer {{ token }}"}
        else:
          - {name: else, get: /else}
      - repeat: 4
        steps:
          - name: again
            get: /again
            headers: {Authorization: "Bearer {{ token }}"}
      - name: signed
        post: /signed
        json: {order: "{{ iter }}"}
        headers: {X-Signature: "{{ hmac_sha256(vars.key, body) }}"}
        expect: {status: 200}
load: {stages: [{duration: 1s, users: 1}]}
`

// Control flow sends exactly what it says: for_each over 3 ids makes 3
// requests, an if that is false sends and records nothing, repeat N sends
// N, and an expression signs the body.
func TestControlFlowExactCounts(t *testing.T) {
	srv := newAuthServer(t, 0)
	prog, us, rec := flowUsers(t, flowPlan, srv.url, 1)
	runIters(t, us[0], prog.ScenarioFor(0), 10)
	for _, c := range []struct {
		step, path string
		want       int
	}{
		{"item", "GET /items/a1", 10}, {"", "GET /items/a2", 10}, {"", "GET /items/a3", 10},
		{"never", "GET /never", 0}, {"guarded", "GET /guarded", 10}, {"else", "GET /else", 0},
		{"again", "GET /again", 40}, {"signed", "POST /signed", 10},
	} {
		if got := srv.hit(c.path); got != c.want {
			t.Errorf("server saw %s %d times, want %d", c.path, got, c.want)
		}
		if c.step == "" {
			continue
		}
		want := int64(c.want)
		if c.step == "item" {
			want = 30
		}
		if req, failed := stepCount(rec, c.step); req != want || failed != 0 {
			t.Errorf("step %s: %d requests, %d failed; want %d, 0", c.step, req, failed, want)
		}
	}
}

// choose splits iterations by weight, and every iteration takes exactly
// one branch.
func TestChooseByWeight(t *testing.T) {
	srv := newAuthServer(t, 0)
	yaml := `
scenarios:
  s:
    steps:
      - choose:
          - weight: 3
            steps: [{name: browse, get: /browse}]
          - steps: [{name: buy, get: /buy}]
load: {stages: [{duration: 1s, users: 1}]}
`
	prog, us, _ := flowUsers(t, yaml, srv.url, 1)
	runIters(t, us[0], prog.ScenarioFor(0), 400)
	browse, buy := srv.hit("GET /browse"), srv.hit("GET /buy")
	if browse+buy != 400 {
		t.Fatalf("browse %d + buy %d != 400", browse, buy)
	}
	// 3:1 of 400 is 300:100; the bounds are 6 standard deviations wide.
	if browse < 250 || browse > 350 {
		t.Errorf("browse %d of 400, want about 300", browse)
	}
}

// A for_each whose list is not a list fails the iteration as a check
// against the next request step, and sends nothing.
func TestForEachOverNonListFails(t *testing.T) {
	srv := newAuthServer(t, 0)
	yaml := `
scenarios:
  s:
    steps:
      - name: login
        post: /login?user=x
        capture: {token: {json: token}}
      - for_each: token
        steps:
          - name: item
            get: /items/{{ item }}
load: {stages: [{duration: 1s, users: 1}]}
`
	prog, us, rec := flowUsers(t, yaml, srv.url, 1)
	runIters(t, us[0], prog.ScenarioFor(0), 3)
	if n := srv.hit("GET /items/"); n != 0 {
		t.Errorf("sent %d item requests, want 0", n)
	}
	for _, s := range rec.Snapshot().Steps {
		if s.Name == "item" && (s.Failed != 3 || s.ByClass["check"] != 3) {
			t.Errorf("item: %+v, want 3 check failures", s)
		}
	}
}

// More than MaxForEach items is refused, not walked.
func TestForEachBounded(t *testing.T) {
	u := &User{}
	big, _ := json.Marshal(make([]int, plan.MaxForEach+1))
	p, err := plan.Parse("t.yaml", []byte(`
target: http://127.0.0.1:1
scenarios:
  s:
    steps:
      - {get: /, capture: {ids: {json: ids}}}
      - for_each: ids
        steps: [{get: /x}]
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	u.env.Captures = []string{string(big), ""}
	_, err = u.listOf(p.Scenarios[0].Steps[1].Flow.Cond)
	if err != errTooLong {
		t.Fatalf("err = %v, want %v", err, errTooLong)
	}
	u.env.Captures[0] = string(big[:len(big)-3]) + "]"
	if items, err := u.listOf(p.Scenarios[0].Steps[1].Flow.Cond); err != nil || len(items) != plan.MaxForEach {
		t.Fatalf("%d items, %v; want %d", len(items), err, plan.MaxForEach)
	}
}

const ifCapturePlan = `
scenarios:
  s:
    steps:
      - name: get
        get: /
        capture: {v: {header: X-V}}
      - name: guarded
        get: /
        if: v == "yes"
load: {stages: [{duration: 1s, users: 1}]}
`

const ifAnswer = "HTTP/1.1 200 OK\r\nX-V: yes\r\nContent-Length: 2\r\n\r\nok"

// An if over a capture costs at most one allocation per iteration (the
// capture's own string; the condition allocates nothing).
func TestIfOverCaptureDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	base := cannedServer(t, ifAnswer)
	u, sc, rec := recUserFor(t, ifCapturePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	allocs := testing.AllocsPerRun(200, func() { u.Iterate(sc, time.Time{}, stop) })
	if allocs > 1 {
		t.Fatalf("%.1f allocs per iteration, want at most 1", allocs)
	}
	if req, _ := stepCount(rec, "guarded"); req != 202 {
		t.Fatalf("guarded sent %d times, want 202", req)
	}
}

// BenchmarkIterationIfCapture is a step guarded by an if over a capture.
func BenchmarkIterationIfCapture(b *testing.B) {
	base := cannedServer(b, ifAnswer)
	u, sc, _ := recUserFor(b, ifCapturePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
}

// The static GET stays free of allocations with the workflow machinery in
// the loop.
func TestStaticGETDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	base := cannedServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello, world!")
	u, sc, _ := recUserFor(t, "defaults: {headers: {Accept: \"*/*\"}}\nscenarios:\n  s:\n    steps:\n      - get: /\n        expect: {status: 200}\nload: {stages: [{duration: 1s, users: 1}]}\n", base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	if allocs := testing.AllocsPerRun(200, func() { u.Iterate(sc, time.Time{}, stop) }); allocs != 0 {
		t.Fatalf("%.1f allocs per iteration, want 0", allocs)
	}
}

// Loops whose requests a condition skips cannot spin without end: the
// iteration fails once it has taken maxControlSteps control steps, and
// nothing was sent.
func TestRunawayLoopIsBounded(t *testing.T) {
	srv := newAuthServer(t, 0)
	yaml := `
scenarios:
  s:
    steps:
      - repeat: 10000
        steps:
          - repeat: 10000
            steps:
              - name: never
                get: /never
                if: iter < 0
load: {stages: [{duration: 1s, users: 1}]}
`
	prog, us, rec := flowUsers(t, yaml, srv.url, 1)
	runIters(t, us[0], prog.ScenarioFor(0), 1)
	if n := srv.hit("GET /never"); n != 0 {
		t.Fatalf("sent %d, want 0", n)
	}
	if req, failed := stepCount(rec, "never"); req != 1 || failed != 1 {
		t.Fatalf("never: %d requests, %d failed; want the one check failure", req, failed)
	}
}
