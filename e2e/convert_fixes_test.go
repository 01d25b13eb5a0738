package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A curl command with options that take values, typed headers and
// user:password@ converts to a plan that sends what curl sent.
func TestConvertCurlSendsWhatCurlSent(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(r.Context()))
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	planPath := filepath.Join(dir, "curl.yaml")
	cmd := `curl -sS -m 5 --connect-timeout 3 -o /dev/null -A 'agent/1' -H 'Origin: http://app.test' http://ann:s3cret@` + host + `/v1/x?q=1`
	out := e2etest.Stampede(t, 60*time.Second, "", "convert", "curl", cmd, "-o", planPath, "--duration", "1s")
	if out.Code != 0 {
		t.Fatalf("convert: %s", out)
	}
	// The password is not written into the plan: it reads CURL_PASSWORD.
	if text, _ := os.ReadFile(planPath); strings.Contains(string(text), "s3cret") || !strings.Contains(string(text), "${CURL_PASSWORD}") {
		t.Fatalf("the plan holds the password, or no reference to it:\n%s", text)
	}
	run := e2etest.Start(t, "", []string{"CURL_PASSWORD=s3cret"}, "run", planPath, "-o", filepath.Join(dir, "r.json"), "-q").Wait(t, 60*time.Second)
	if run.Code != 0 {
		t.Fatalf("run: %s", run)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the server saw no request")
	}
	r := seen[0]
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ann:s3cret"))
	if r.URL.Path != "/v1/x" || r.URL.RawQuery != "q=1" || r.Header.Get("Authorization") != want ||
		r.UserAgent() != "agent/1" || r.Header.Get("Origin") != "http://app.test" {
		t.Errorf("sent %s %s, Authorization %q, User-Agent %q, Origin %q", r.Method, r.URL, r.Header.Get("Authorization"), r.UserAgent(), r.Header.Get("Origin"))
	}
}

// Django's CSRF: the server sets a fresh csrftoken cookie on every visit
// and accepts a POST only with the same value in X-CSRFToken. The plan
// converted from a recording sends each user's own cookie value.
func TestConvertHARCookieCSRF(t *testing.T) {
	var n, ok, refused atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/session":
			tok := "Tk" + strings.Repeat("x", 6) + string(rune('a'+n.Add(1)%26)) + "91"
			http.SetCookie(w, &http.Cookie{Name: "csrftoken", Value: tok, Path: "/"})
			w.Write([]byte("{}"))
		case "/api/cart":
			c, err := r.Cookie("csrftoken")
			if err != nil || r.Header.Get("X-CSRFToken") != c.Value {
				refused.Add(1)
				w.WriteHeader(403)
				return
			}
			ok.Add(1)
			w.Write([]byte("{}"))
		}
	}))
	defer srv.Close()
	har := map[string]any{"log": map[string]any{"entries": []any{
		map[string]any{
			"request":  map[string]any{"method": "GET", "url": srv.URL + "/api/session", "headers": []any{}},
			"response": map[string]any{"status": 200, "headers": []any{map[string]string{"name": "Set-Cookie", "value": "csrftoken=Zq8w1TkP0aXv; Path=/"}}, "content": map[string]any{"mimeType": "application/json", "text": "{}"}},
		},
		map[string]any{
			"request": map[string]any{"method": "POST", "url": srv.URL + "/api/cart", "headers": []any{
				map[string]string{"name": "X-CSRFToken", "value": "Zq8w1TkP0aXv"},
				map[string]string{"name": "Cookie", "value": "csrftoken=Zq8w1TkP0aXv"},
			}, "postData": map[string]any{"mimeType": "application/x-www-form-urlencoded", "text": "sku=A1&qty=2"}},
			"response": map[string]any{"status": 200, "headers": []any{}, "content": map[string]any{"mimeType": "application/json", "text": "{}"}},
		},
	}}}
	b, _ := json.Marshal(har)
	dir := t.TempDir()
	harPath, planPath := filepath.Join(dir, "csrf.har"), filepath.Join(dir, "csrf.yaml")
	if err := os.WriteFile(harPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := e2etest.Stampede(t, 60*time.Second, "", "convert", "har", harPath, "-o", planPath, "--duration", "1s")
	if out.Code != 0 {
		t.Fatalf("convert: %s", out)
	}
	run := e2etest.Stampede(t, 60*time.Second, "", "run", planPath, "-o", filepath.Join(dir, "r.json"), "-q")
	text, _ := os.ReadFile(planPath)
	if run.Code != 0 || ok.Load() == 0 || refused.Load() != 0 {
		t.Fatalf("accepted %d, refused %d: %s\n%s", ok.Load(), refused.Load(), run, text)
	}
}
