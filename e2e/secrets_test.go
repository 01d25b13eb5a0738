package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
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
// and the dashboard.
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
  s:
    steps:
      - name: login
        post: /login
        json: {user: scan}
        capture: {token: {json: token}}
      - name: echo
        post: "/api/echo?t={{ token }}"
        headers: {Authorization: "Bearer {{ token }}", X-Api-Key: "${SCAN_KEY}", X-Trace: "t={{ token }}"}
        json: {token: "{{ token }}"}
      - name: denied
        get: /api/denied
        headers: {Authorization: "Bearer {{ token }}"}
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
load: {stages: [{duration: 3s, users: 3}]}
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
	sawFailures := false
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			continue
		}
		streams[f.Name()] = string(b)
		if strings.HasSuffix(f.Name(), ".failures.jsonl") && strings.Contains(string(b), "/api/echo") &&
			strings.Contains(string(b), "/php/denied") && strings.Contains(string(b), "/php/relogin") {
			sawFailures = true
		}
	}
	if !sawFailures || !strings.Contains(streams["r.json"], "500") || !strings.Contains(streams["dashboard"], "<html") {
		t.Fatalf("the run left no failure samples, errors or dashboard page to scan (files %v)", names(files))
	}
	for where, text := range streams {
		for what, secret := range secrets {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("the %s is in %s: …%s…", what, where, text[max(0, i-80):min(len(text), i+len(secret)+20)])
			}
		}
	}
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
