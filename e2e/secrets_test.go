package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/result"
)

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// echoServer answers as debug pages and many 401 pages do: with the
// request, headers, URL and body, echoed back. It logs in with a bearer
// token and a session cookie, and counts the requests that carried them.
type echoServer struct {
	token, cookie string
	// slashed and fresh hold '/', which PHP's JSON encoder writes as "\/":
	// slashed is sent as a bearer token and echoed on a 401, fresh is
	// captured (secret) by a login whose check fails.
	slashed, fresh string
	mu             sync.Mutex
	carried        int
}

func (s *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if strings.Contains(r.Header.Get("Authorization"), s.token) {
		s.mu.Lock()
		s.carried++
		s.mu.Unlock()
	}
	var echo strings.Builder
	fmt.Fprintf(&echo, "%s %s\n", r.Method, r.URL.String())
	names := make([]string, 0, len(r.Header))
	for n := range r.Header {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&echo, "%s: %s\n", n, strings.Join(r.Header[n], ", "))
	}
	echo.Write(body)
	switch r.URL.Path {
	case "/login":
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: s.cookie, Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":%q}`, s.token)
	case "/php/login":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":"%s"}`, phpSlashes(s.slashed))
	case "/php/denied":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"denied","authorization":"%s"}`, phpSlashes(r.Header.Get("Authorization")))
	case "/php/relogin":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"token":"%s","status":"bad"}`, phpSlashes(s.fresh))
	case "/api/denied":
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "<html><body><h1>401</h1><pre>%s</pre><p>cookie sid=%s</p></body></html>", echo.String(), s.cookie)
	default:
		// Set-Cookie again on the error: a server-set value in an answer's
		// headers and body.
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: s.cookie, Path: "/"})
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, echo.String())
	}
}

// phpSlashes writes '/' as PHP's json_encode does by default.
func phpSlashes(s string) string { return strings.ReplaceAll(s, "/", `\/`) }

// TestSecretsScan plants credentials everywhere a server can echo them (an
// environment API key in a secret header, the target's password, a token
// captured at login and sent as a bearer token, in a query, another header
// and a body, a cookie the server set) and greps every file and stream a
// run writes for them: the result, --keep-failures samples, --junit, CSV,
// the reports in every format, the live dashboard's pages and events, the
// Kubernetes manifest, stdout and stderr. A PHP-like server echoes a
// token with '/' escaped as "\/", and a login whose check fails answers
// with a secret capture's token. Before, the captured token and
// the cookie were in the result's messages, the Errors table, every report
// and the dashboard. Each echoing step has a scenario of its own, as a
// failed step ends its iteration: when the denied and basic steps came
// after the echo step, which always fails, they never ran and the scan
// passed without seeing their echoes.
func TestSecretsScan(t *testing.T) {
	slashedHex, freshHex := randomHex(16), randomHex(16)
	srv := &echoServer{token: "tok-" + randomHex(16), cookie: "ck-" + randomHex(16),
		slashed: "tok/" + slashedHex + "/z", fresh: "tok/" + freshHex + "/z"}
	target := httptest.NewServer(srv)
	defer target.Close()
	pass, apiKey := "pw-"+randomHex(8), "key-"+randomHex(8)
	secrets := map[string]string{
		"captured token": srv.token, "server-set cookie": srv.cookie, "target password": pass, "API key": apiKey,
		"Basic credentials": base64.StdEncoding.EncodeToString([]byte("scan:" + pass)),
		// Any form of these tokens holds their random middle.
		"slashed token": slashedHex, "failed login's token": freshHex,
	}
	env := []string{"SCAN_PASS=" + pass, "SCAN_KEY=" + apiKey}
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: secrets
target: http://scan:${SCAN_PASS}@%s
secret_headers: [X-Api-Key]
scenarios:
  echo:
    steps:
      - name: login
        post: /login
        json: {user: scan}
        capture: {token: {json: token}}
      - name: echo
        post: "/api/echo?t={{ token }}"
        headers: {Authorization: "Bearer {{ token }}", X-Api-Key: "${SCAN_KEY}", X-Trace: "t={{ token }}"}
        json: {token: "{{ token }}"}
      - think: 200ms
  denied:
    steps:
      - name: login
        post: /login
        json: {user: scan}
        capture: {token: {json: token}}
      - name: denied
        get: /api/denied
        headers: {Authorization: "Bearer {{ token }}"}
      - think: 200ms
  basic:
    steps:
      - name: login
        post: /login
        json: {user: scan}
      - name: basic
        get: /api/basic
      - think: 200ms
  php:
    steps:
      - name: php login
        post: /php/login
        capture: {token: {json: token}}
      - name: php denied
        get: /php/denied
        headers: {Authorization: "Bearer {{ token }}"}
      - think: 200ms
  relogin:
    steps:
      - name: relogin
        post: /php/relogin
        capture: {fresh: {json: token, secret: true}}
        expect: {json: {status: ok}}
      - think: 200ms
load: {stages: [{duration: 3s, users: 5}]}
`, strings.TrimPrefix(target.URL, "http://")), nil)
	dir := filepath.Dir(planPath)
	res := filepath.Join(dir, "r.json")
	addr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	proc := e2etest.Start(t, dir, env, "run", planPath, "-o", res, "--keep-failures", "5",
		"--junit", filepath.Join(dir, "junit.xml"), "--output", "csv="+filepath.Join(dir, "series.csv"), "--dashboard="+addr)
	streams := map[string]string{}
	streams["dashboard"] = watchDashboard(t, proc, addr)
	o := proc.Wait(t, 120*time.Second)
	if o.Code != 1 && o.Code != 0 {
		t.Fatalf("run: %s", o)
	}
	streams["run stdout"], streams["run stderr"] = o.Stdout, o.Stderr
	requireEveryPlaceRan(t, res)
	for _, f := range []string{"text", "md", "html", "json", "junit"} {
		r := e2etest.Stampede(t, 60*time.Second, dir, "report", res, "--format", f)
		streams["report "+f], streams["report "+f+" stderr"] = r.Stdout, r.Stderr
	}
	k := e2etest.Start(t, dir, env, "k8s", planPath, "--segments", "2", "-o", filepath.Join(dir, "manifest.yaml")).Wait(t, 60*time.Second)
	if k.Code != 0 {
		t.Fatalf("k8s: %s", k)
	}
	streams["k8s stdout"], streams["k8s stderr"] = k.Stdout, k.Stderr

	srv.mu.Lock()
	carried := srv.carried
	srv.mu.Unlock()
	if carried == 0 {
		t.Fatal("no request carried the captured token: the scan would prove nothing")
	}
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			continue
		}
		streams[f.Name()] = string(b)
	}
	if !strings.Contains(streams["dashboard"], "<html") {
		t.Fatalf("the dashboard sent no page to scan (files %v)", names(files))
	}
	for where, text := range streams {
		for what, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("the %s is in %s: …%s…", what, where, text[max(0, i-80):min(len(text), i+len(secret)+20)])
			}
		}
	}
}

// echoPlace is a step of the scan's plan and what its run must show: a
// failed step ends its iteration, so each echoing step sits alone after
// its login in a scenario of its own, and the scan checks that it was
// sent, answered as the server echoes, and sampled; a step that never ran
// would let the scan pass without looking at its echo.
type echoPlace struct {
	scenario, step string
	status         string // every answer's status
	fails          bool   // every answer failed, and was sampled
}

var echoPlaces = []echoPlace{
	{"echo", "login", "200", false}, {"echo", "echo", "500", true},
	{"denied", "login", "200", false}, {"denied", "denied", "401", true},
	{"basic", "login", "200", false}, {"basic", "basic", "500", true},
	{"php", "php login", "200", false}, {"php", "php denied", "401", true},
	{"relogin", "relogin", "200", true},
}

func requireEveryPlaceRan(t *testing.T, resultPath string) {
	t.Helper()
	steps := map[[2]string]result.Step{}
	for _, st := range e2etest.ReadResult(t, resultPath).Steps {
		steps[[2]string{st.Scenario, st.Name}] = st
	}
	sampled := failureSamplesByStep(t, metrics.FailuresPath(resultPath))
	for _, p := range echoPlaces {
		key := [2]string{p.scenario, p.step}
		st, ok := steps[key]
		switch {
		case !ok || st.Requests == 0:
			t.Errorf("step %s/%s never ran: the scan would not see its echo", p.scenario, p.step)
		case st.Statuses[p.status] != st.Requests:
			t.Errorf("step %s/%s: statuses %v over %d requests, want all %s", p.scenario, p.step, st.Statuses, st.Requests, p.status)
		case p.fails && (st.Failed != st.Requests || sampled[key] == 0):
			t.Errorf("step %s/%s: %d of %d requests failed, %d sampled; want all failed and sampled", p.scenario, p.step, st.Failed, st.Requests, sampled[key])
		case !p.fails && st.Successful != st.Requests:
			t.Errorf("step %s/%s: %d of %d requests succeeded, want all", p.scenario, p.step, st.Successful, st.Requests)
		}
	}
}

// failureSamplesByStep counts the --keep-failures lines of the load phase
// by scenario and step.
func failureSamplesByStep(t *testing.T, path string) map[[2]string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("failure samples: %v", err)
	}
	out := map[[2]string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var s struct{ Scenario, Step, Phase string }
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("failure sample %q: %v", line, err)
		}
		if s.Phase == "load" {
			out[[2]string{s.Scenario, s.Step}]++
		}
	}
	return out
}

func names(fs []os.DirEntry) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name())
	}
	return out
}

// watchDashboard reads the dashboard's page, report, live figures and
// event stream while the run goes, and returns all it was sent.
func watchDashboard(t *testing.T, p *e2etest.Proc, addr string) string {
	t.Helper()
	base := waitDashboard(t, p, addr)
	c := &http.Client{Timeout: 2 * time.Second}
	var all strings.Builder
	deadline := time.Now().Add(90 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		got := 0
		for _, path := range []string{"/", "/report", "/live", "/events"} {
			resp, err := c.Get(base + path)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body) // /events: until the client's timeout
			resp.Body.Close()
			all.Write(b)
			got++
		}
		if got == 0 && round > 0 {
			break // the run ended and took the dashboard with it
		}
		if strings.Contains(all.String(), "500") && round >= 3 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	return all.String()
}
