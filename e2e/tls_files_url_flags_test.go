package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A plan whose tls.ca_file is missing or holds no PEM certificate is
// refused by validate as run refuses it: exit 2, with the key's
// file:line:col, as a missing data file is. Before, validate said ok and
// run refused it with no position.
func TestTLSCAFileRefusedWithPosition(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	for _, c := range []struct{ file, want string }{
		{"nope.pem", "not found"},
		{"customers.csv", "holds no PEM certificate"},
	} {
		plan := e2etest.WritePlan(t, "target: "+srv.URL+"\ntls: {ca_file: "+c.file+"}\n"+
			"scenarios:\n  s: {steps: [{get: /}]}\nload: {stages: [{duration: 1s, users: 1}]}\n",
			map[string]string{"customers.csv": "id\n1\n"})
		for _, cmd := range []string{"validate", "run"} {
			o := e2etest.Stampede(t, 60*time.Second, "", cmd, plan)
			if o.Code != 2 {
				t.Errorf("%s with ca_file %s: exit %d, want 2\n%s", cmd, c.file, o.Code, o)
			}
			if want := "plan.yaml:2:16: tls ca_file"; !strings.Contains(o.Stderr, want) || !strings.Contains(o.Stderr, c.want) {
				t.Errorf("%s with ca_file %s: stderr lacks %q and %q\n%s", cmd, c.file, want, c.want, o)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the target got %d requests", n)
	}
}

// url against a server whose certificate is not trusted here: the advice
// names url's --ca-file and --insecure (url has no plan to put
// tls.ca_file in), and each of them works.
func TestURLCAFileAndInsecure(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "customers.csv"), []byte("id\n1\n"), 0o644)
	u := srv.URL + "/items"

	o := e2etest.Stampede(t, 60*time.Second, dir, "url", u, "-c", "2", "-d", "1s")
	if o.Code != 3 {
		t.Errorf("untrusted: exit %d, want 3\n%s", o.Code, o)
	}
	for _, want := range []string{"certificate", "Nothing was sent", "--ca-file", "--insecure"} {
		if !strings.Contains(o.Stderr, want) {
			t.Errorf("untrusted: stderr lacks %q\n%s", want, o)
		}
	}
	if strings.Contains(o.Stderr, "tls.ca_file") || strings.Contains(o.Stderr, "in the plan") {
		t.Errorf("untrusted: url's advice names a plan it does not have\n%s", o)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the server before the TLS check refused", n)
	}

	for _, flags := range [][]string{{"--ca-file", "ca.pem"}, {"--insecure"}} {
		before := hits.Load()
		o = e2etest.Stampede(t, 60*time.Second, dir, append([]string{"url", u, "-c", "2", "-d", "1s"}, flags...)...)
		if o.Code != 0 || hits.Load() == before {
			t.Errorf("%v: exit %d, %d requests; want exit 0 and requests\n%s", flags, o.Code, hits.Load()-before, o)
		}
	}

	for file, want := range map[string]string{"nope.pem": "--ca-file nope.pem not found", "customers.csv": "--ca-file customers.csv holds no PEM certificate"} {
		o = e2etest.Stampede(t, 60*time.Second, dir, "url", u, "-d", "1s", "--ca-file", file)
		if o.Code != 2 || !strings.Contains(o.Stderr, want) || strings.Contains(o.Stderr, "(url)") {
			t.Errorf("--ca-file %s: exit %d, want 2 and %q\n%s", file, o.Code, want, o)
		}
	}
}

// url's argument and numeric flags are refused in their own terms, exit
// 2 and nothing sent: a URL without a scheme (which named lines of the
// plan url builds in memory, twice), and a negative, NaN or infinite -r,
// which ran flat out and exited 0.
func TestURLRefusesBadArgumentsInTheirTerms(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	hostport := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{hostport + "/"}, `URL "` + hostport + `/" is not an absolute http(s) URL; did you mean ` + srv.URL + "/?"},
		{[]string{"ftp://" + hostport + "/"}, "is not an absolute http(s) URL"},
		{[]string{srv.URL + "/", "-r", "-5"}, "-r -5"},
		{[]string{srv.URL + "/", "-r", "-5", "--open"}, "-r -5"},
		{[]string{srv.URL + "/", "-r", "NaN"}, "-r NaN"},
		{[]string{srv.URL + "/", "-r", "Inf"}, "-r +Inf"},
		{[]string{srv.URL + "/", "-r", "1e-12", "-c", "50"}, "too low"},
		{[]string{srv.URL + "/", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{srv.URL + "/", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{srv.URL + "/", "-m", "FOO"}, `-m "FOO"`},
		{[]string{srv.URL + "/", "-H", "X: {{bad"}, "unterminated template"},
	} {
		o := e2etest.Stampede(t, 60*time.Second, "", append([]string{"url"}, append(c.args, "-d", "1s")...)...)
		if o.Code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", c.args, o.Code, o)
		}
		if !strings.Contains(o.Stderr, c.want) {
			t.Errorf("%v: stderr lacks %q\n%s", c.args, c.want, o)
		}
		if strings.Contains(o.Stderr, "(url)") {
			t.Errorf("%v: stderr names lines of the in-memory plan\n%s", c.args, o)
		}
		if n := strings.Count(strings.TrimSpace(o.Stderr), "\n"); n > 0 {
			t.Errorf("%v: want one line, got %d more\n%s", c.args, n, o)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
