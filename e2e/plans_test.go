package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// seenServer answers 200 "hello" to everything and remembers each
// request's path with its query, and its Basic credentials.
type seenServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths map[string]int
	auth  map[string]int // "user:pass", or "" without Basic auth
}

func newSeenServer(t *testing.T) *seenServer {
	s := &seenServer{paths: map[string]int{}, auth: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		key := ""
		if ok {
			key = u + ":" + p
		}
		s.mu.Lock()
		s.paths[r.URL.RequestURI()]++
		s.auth[key]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "hello")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *seenServer) snapshot() (map[string]int, map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, a := map[string]int{}, map[string]int{}
	for k, v := range s.paths {
		p[k] = v
	}
	for k, v := range s.auth {
		a[k] = v
	}
	return p, a
}

func (s *seenServer) total() int {
	p, _ := s.snapshot()
	n := 0
	for _, v := range p {
		n += v
	}
	return n
}

// refused runs validate and run on plan and checks both exit 2 with the
// plan's file:line:col and every one of wants in stderr.
func refused(t *testing.T, plan string, line int, wants ...string) {
	t.Helper()
	for _, cmd := range []string{"validate", "run"} {
		args := []string{cmd, plan}
		if cmd == "run" {
			args = append(args, "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
		}
		o := e2etest.Stampede(t, 60*time.Second, "", args...)
		if o.Code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", cmd, o.Code, o)
			continue
		}
		if !regexp.MustCompile(regexp.QuoteMeta(plan) + fmt.Sprintf(`:%d:\d+: `, line)).MatchString(o.Stderr) {
			t.Errorf("%s: stderr lacks %s:%d:COL:\n%s", cmd, plan, line, o.Stderr)
		}
		for _, w := range wants {
			if !strings.Contains(o.Stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, w, o.Stderr)
			}
		}
	}
}

// TestPlanPopulationTooLarge: a peak of connections past the open-files
// limit is refused before any load, with what to do (issue 12 item 2).
// Before, users: 1000000000 passed validate and the run took every open
// file, overran its stage and could not write its checkpoint.
func TestPlanPopulationTooLarge(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	t.Run("users", func(t *testing.T) {
		t.Parallel()
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 2s, users: 1000000000}
`, srv.URL), nil)
		// 50,000 processes are no advice to give: lower the load instead.
		refused(t, plan, 6, "1,000,000,000 users", "open-files limit", "more than 10,000 processes would be needed", "ulimit")
	})
	t.Run("users a few workers hold", func(t *testing.T) {
		t.Parallel()
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 2s, users: 100000}
`, srv.URL), nil)
		refused(t, plan, 6, "100,000 users", "open-files limit", "--workers", "ulimit")
	})
	t.Run("tenants", func(t *testing.T) {
		t.Parallel()
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
tenants: {count: 1000000000}
scenarios:
  s: {per_tenant: 1, steps: [{get: /ok}]}
load:
  stages:
    - {duration: 2s, users: 1}
`, srv.URL), nil)
		refused(t, plan, 7, "open-files limit", "processes would be needed")
	})
	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  max_in_flight: 100
  stages:
    - {duration: 2s, rate: 1000000000/s}
`, srv.URL), nil)
		refused(t, plan, 7, "more than one process can schedule", "--workers 1000")
	})
	t.Run("workers split it", func(t *testing.T) {
		t.Parallel()
		// Each of 2 processes would still hold 500,000,000 users.
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 2s, users: 1000000000}
`, srv.URL), nil)
		o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-q", "--workers", "2", "-o", filepath.Join(t.TempDir(), "r.json"))
		if o.Code != 2 || !strings.Contains(o.Stderr, "500,000,000 users in each of 2 processes") {
			t.Errorf("exit %d, want 2 with the share of one process\n%s", o.Code, o)
		}
	})
	if n := srv.total(); n != 0 {
		t.Errorf("refused plans sent %d requests", n)
	}
}

// TestPlanNotRegularFile: a FIFO as a data file or as the plan is refused
// at once; validate used to block forever opening it (issue 12 item 3).
func TestPlanNotRegularFile(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
data:
  ids: {file: ids.csv}
scenarios:
  s: {steps: [{get: "/ok?id={{ data.ids.id }}"}]}
load:
  stages: [{duration: 1s, users: 1}]
`, srv.URL), nil)
	fifo := filepath.Join(filepath.Dir(plan), "ids.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	refused(t, plan, 3, "named pipe (FIFO), not a regular file")

	o := e2etest.Stampede(t, 60*time.Second, "", "validate", fifo)
	if o.Code != 2 || !strings.Contains(o.Stderr, "not a regular file") {
		t.Errorf("validate on a FIFO plan: exit %d, want 2 saying it is not a regular file\n%s", o.Code, o)
	}
}

// TestPlanZeroPopulation: a plan whose every stage is 0 would run, send
// nothing and exit 0; it is refused (issue 12 item 3).
func TestPlanZeroPopulation(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	for _, stage := range []string{"users: 0", "users: 0 -> 0", "rate: 0/s"} {
		plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s: {steps: [{get: /ok}]}
load:
  stages:
    - {duration: 1s, %s}
`, srv.URL, stage), nil)
		refused(t, plan, 4, "the run would send nothing")
	}
	if n := srv.total(); n != 0 {
		t.Errorf("refused plans sent %d requests", n)
	}
}

// TestPlanTargetBasePath: the target's path is joined to relative step
// paths, as k6's and Gatling's base URLs are; an absolute step URL is sent
// as written (issue 12 item 4). Before, /api/v1 was dropped.
func TestPlanTargetBasePath(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	out := filepath.Join(t.TempDir(), "r.json")
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %[1]s/api/v1/
scenarios:
  s:
    steps:
      - get: /items/1
      - get: "/items?page=2"
      - get: %[1]s/health
      - think: 100ms
load:
  stages: [{duration: 1s, users: 1}]
`, srv.URL), nil)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-q", "-o", out)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	paths, _ := srv.snapshot()
	if paths["/api/v1/items/1"] == 0 || paths["/api/v1/items?page=2"] == 0 || paths["/health"] == 0 {
		t.Errorf("paths seen: %v; want /api/v1/items/1, /api/v1/items?page=2 and /health", paths)
	}
	for p := range paths {
		if p != "/api/v1/items/1" && p != "/api/v1/items?page=2" && p != "/health" {
			t.Errorf("unexpected path %q (all: %v)", p, paths)
		}
	}
	// Step names stay as written: they are the plan's metric keys.
	res := e2etest.ReadResult(t, out)
	stepOf(t, res, "s", "GET /items/1")
}

// TestPlanThresholdsCheckedAtLoad: a rate without % and a threshold on a
// step the plan does not have are refused by validate and run, with the
// place and a hint (issue 12 item 6). Before, error_rate < 1 was read as
// 100% and passed a run with half its requests failed, and a misspelt
// step was only found after the run.
func TestPlanThresholdsCheckedAtLoad(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s:
    steps:
      - {name: POST vote, post: /votes}
load:
  stages: [{duration: 1s, users: 1}]
thresholds:
  - "error_rate < 1"
  - "POST vot: p99 < 1s"
`, srv.URL), nil)
	refused(t, plan, 9, `bad value "1": error_rate is a rate; expected a percentage such as 1%`,
		plan+`:10:5: threshold "POST vot: p99 < 1s" names step "POST vot", which the plan does not have: did you mean "POST vote"?`)
	if n := srv.total(); n != 0 {
		t.Errorf("refused plans sent %d requests", n)
	}
}

// TestPlanURLCredentials: user:password in the target are sent as Basic
// authentication (as curl does) and appear in no output: summary, result,
// Markdown and HTML reports (issue 12 item 11). Before, they were printed
// and stored, and never sent.
func TestPlanURLCredentials(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	const pass = "Hunter2Secret"
	out := filepath.Join(t.TempDir(), "r.json")
	target := strings.Replace(srv.URL, "http://", "http://alice:${PASS}@", 1)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s:
    steps:
      - get: /ok
      - think: 50ms
load:
  stages: [{duration: 1s, users: 1}]
`, target), nil)
	o := e2etest.Start(t, "", []string{"PASS=" + pass}, "run", plan, "-o", out).Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	_, auth := srv.snapshot()
	if auth["alice:"+pass] == 0 || len(auth) != 1 {
		t.Errorf("credentials seen by the server: %v; want every request with alice's", auth)
	}
	noSecret(t, "run output", o.Stdout+o.Stderr, pass)
	if !strings.Contains(o.Stdout, srv.URL) {
		t.Errorf("summary lacks the target without credentials %s:\n%s", srv.URL, o.Stdout)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "result file", string(raw), pass)
	for _, f := range []string{"md", "html", "text"} {
		r := e2etest.Stampede(t, 60*time.Second, "", "report", out, "--format", f)
		if r.Code != 0 {
			t.Fatalf("report %s: exit %d\n%s", f, r.Code, r)
		}
		noSecret(t, "report "+f, r.Stdout, pass)
	}
}

// A password written literally in the target URL (not through ${ENV}) is
// kept out of the result too, plan source included.
func TestPlanLiteralURLPassword(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	const pass = "Hunter3Literal"
	out := filepath.Join(t.TempDir(), "r.json")
	target := strings.Replace(srv.URL, "http://", "http://alice:"+pass+"@", 1)
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s:
    steps:
      - get: /ok
      - think: 50ms
load:
  stages: [{duration: 1s, users: 1}]
`, target), nil)
	o := e2etest.Start(t, "", nil, "run", plan, "-o", out).Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	if _, auth := srv.snapshot(); auth["alice:"+pass] == 0 {
		t.Errorf("credentials seen by the server: %v; want alice's", auth)
	}
	noSecret(t, "run output", o.Stdout+o.Stderr, pass)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "result file", string(raw), pass)
}

// TestPlanEnvNotInErrors: a ${ENV} value in an expectation does not reach
// the result's failure messages (issue 12 item 12). Before, error_samples
// held `body does not contain "CheckSecret999"`.
func TestPlanEnvNotInErrors(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	const secret = "CheckSecret999"
	out := filepath.Join(t.TempDir(), "r.json")
	plan := e2etest.WritePlan(t, fmt.Sprintf(`target: %s
scenarios:
  s:
    steps:
      - get: /ok
        expect: {body_contains: "${CHECK}"}
      - think: 50ms
load:
  stages: [{duration: 1s, users: 1}]
`, srv.URL), nil)
	o := e2etest.Start(t, "", []string{"CHECK=" + secret}, "run", plan, "-o", out).Wait(t, 60*time.Second)
	if o.Code != 0 && o.Code != 1 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	if res.Totals.Failed == 0 {
		t.Fatalf("want failed checks, got none\n%s", o)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, "result file", string(raw), secret)
	noSecret(t, "run output", o.Stdout+o.Stderr, secret)
	if !strings.Contains(string(raw), "body does not contain") {
		t.Errorf("result lacks the (redacted) check message")
	}
}

// TestURLCommand: `stampede url` takes a URL with a query string and with
// user:password (issue 12 item 16): the query is sent, the credentials are
// sent as Basic authentication and printed nowhere. Before, a query made
// it exit 2 and a password was printed.
func TestURLCommand(t *testing.T) {
	t.Parallel()
	srv := newSeenServer(t)
	const pass = "UrlSecret777"
	u := strings.Replace(srv.URL, "http://", "http://bob:"+pass+"@", 1) + "/search?q=a+b&page=2"
	o := e2etest.Stampede(t, 60*time.Second, "", "url", "-c", "1", "-d", "1s", "-r", "20", u)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	paths, auth := srv.snapshot()
	if paths["/search?q=a+b&page=2"] == 0 || len(paths) != 1 {
		t.Errorf("paths seen: %v; want /search?q=a+b&page=2 only", paths)
	}
	if auth["bob:"+pass] == 0 || len(auth) != 1 {
		t.Errorf("credentials seen: %v; want bob's on every request", auth)
	}
	noSecret(t, "url output", o.Stdout+o.Stderr, pass)
}

func noSecret(t *testing.T, where, text, secret string) {
	t.Helper()
	if i := strings.Index(text, secret); i >= 0 {
		t.Errorf("%s holds the secret %q: ...%s...", where, secret, text[max(0, i-80):min(len(text), i+80)])
	}
}
