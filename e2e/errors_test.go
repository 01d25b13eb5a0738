package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/metrics"
)

// errorsServer answers each path with one kind of failure and counts what
// it saw: a 409 with a JSON body, a 503 with an HTML page, a 200 that
// fails the plan's check, and a connection reset after the request.
func errorsServer(t *testing.T) (*httptest.Server, map[string]*atomic.Int64) {
	seen := map[string]*atomic.Int64{"/vote": {}, "/busy": {}, "/check": {}, "/reset": {}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, ok := seen[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		n.Add(1)
		switch r.URL.Path {
		case "/vote":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"voter has already voted"}`))
		case "/busy":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("<!DOCTYPE html>\n<html>\n<head><title>503</title></head>\n<body>\n  <h1>Pool exhausted</h1>\n  <p>try again later</p>\n</body>\n</html>\n"))
		case "/check":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"rejected"}`))
		case "/reset":
			c, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // close with RST
			}
			c.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, seen
}

// TestErrorsTable: the summary's Errors table shows each failure as the
// server gave it, with exactly as many as the server saw, and
// --keep-failures writes whole exchanges with the secrets redacted.
func TestErrorsTable(t *testing.T) {
	t.Parallel()
	srv, seen := errorsServer(t)
	var tlsSeen atomic.Int64
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsSrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			tlsSeen.Add(1)
		}
	}
	tlsSrv.Config.ErrorLog = nil
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)

	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: errors
target: %s
defaults: {timeout: 5s}
scenarios:
  vote:
    steps:
      - think: 20ms
      - name: vote
        post: /vote
        headers: {Authorization: "Bearer s3cr3t-e2e-token", X-Ballot: "${E2E_BALLOT_KEY}"}
        json: {voter: 42, key: "${E2E_BALLOT_KEY}"}
        expect: {status: 201}
  busy:
    steps:
      - think: 20ms
      - {name: busy, get: /busy}
  check:
    steps:
      - think: 20ms
      - {name: check, get: /check, expect: {json: {status: counted}}}
  reset:
    steps:
      - think: 20ms
      - {name: reset, get: /reset}
  tls:
    steps:
      - think: 20ms
      - {name: tls, get: "%s/secure"}
load:
  stages: [{duration: 2s, users: 10}]
`, srv.URL, tlsSrv.URL), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	const envSecret = "ballot-key-from-env-7731"
	o := e2etest.Start(t, "", []string{"E2E_BALLOT_KEY=" + envSecret}, "run", plan, "-o", out, "--keep-failures", "2").Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	table := errorsTableOf(t, o.Stdout)

	count := func(step string) int64 {
		s, ok := res.Step(step)
		if !ok {
			t.Fatalf("no step %q", step)
		}
		if err := s.CheckErrorCounts(); err != nil {
			t.Fatal(err)
		}
		return s.Failed
	}
	for _, c := range []struct {
		step, class, msg string
		server           int64
	}{
		{"vote", "client_error", `409 Conflict: {"error":"voter has already voted"}`, seen["/vote"].Load()},
		{"busy", "server_error", "503 Service Unavailable: 503 Pool exhausted try again later", seen["/busy"].Load()},
		{"check", "check", `json status: expected "counted", got "rejected"`, seen["/check"].Load()},
	} {
		got, ok := table[c.step+"\x00"+c.class+"\x00"+c.msg]
		if !ok {
			t.Errorf("Errors table has no %s %s %q:\n%s", c.step, c.class, c.msg, o.Stdout)
			continue
		}
		if got != c.server || got == 0 || count(c.step) != got {
			t.Errorf("%s: table says %d, server saw %d, step failed %d", c.step, got, c.server, count(c.step))
		}
	}
	// Resets and TLS failures carry the transport's words; all of a
	// step's failures are in its messages, as many as the server saw.
	for _, c := range []struct {
		step, class, word string
		server            int64
	}{
		{"reset", "conn_reset", "", seen["/reset"].Load()},
		{"tls", "tls", "certificate", tlsSeen.Load()},
	} {
		var sum int64
		for k, n := range table {
			parts := strings.SplitN(k, "\x00", 3)
			if parts[0] == c.step && parts[1] == c.class && strings.Contains(parts[2], c.word) {
				sum += n
			}
		}
		if sum == 0 || sum != c.server || count(c.step) != sum {
			t.Errorf("%s: table says %d, server saw %d, step failed %d:\n%s", c.step, sum, c.server, count(c.step), o.Stdout)
		}
	}
	if s, _ := res.Step("check"); s.Statuses["200"] != seen["/check"].Load() {
		t.Errorf("check step statuses %v, server answered %d times 200", s.Statuses, seen["/check"].Load())
	}

	// The samples: two per failing step, whole, and no secret in them.
	data, err := os.ReadFile(strings.TrimSuffix(out, ".json") + ".failures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cr3t") || strings.Contains(string(data), envSecret) {
		t.Fatalf("a secret is in the failure samples:\n%s", data)
	}
	perStep := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var x metrics.Exchange
		if err := json.Unmarshal(sc.Bytes(), &x); err != nil {
			t.Fatal(err)
		}
		perStep[x.Step]++
		if x.Step == "vote" && (x.Response == nil || x.Response.Status != 409 || !strings.Contains(x.Request.Body, `"voter":42`) ||
			!strings.Contains(x.Request.Body, metrics.Redacted) || x.Request.Headers[0][1] != metrics.Redacted) {
			t.Errorf("vote sample: %s", sc.Bytes())
		}
	}
	for _, step := range []string{"vote", "busy", "check", "reset", "tls"} {
		if perStep[step] != 2 {
			t.Errorf("%d samples of %s, want 2 (%v)", perStep[step], step, perStep)
		}
	}
}

// errorsTableOf reads the terminal's Errors table: step, class and message
// to count. A shortened message ends in "…" and is kept as shown.
func errorsTableOf(t *testing.T, stdout string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	in := false
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case line == "Errors:":
			in = true
			continue
		case !in:
			continue
		case line == "":
			return out
		}
		f := strings.Fields(line)
		if f[0] == "Count" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || len(f) < 5 {
			t.Fatalf("bad Errors line %q", line)
		}
		// Count, % of step, step, class, then the message (steps and
		// classes here are one word each): each found after the last.
		at := 0
		for _, w := range f[:4] {
			at += strings.Index(line[at:], w) + len(w)
		}
		msg := strings.TrimSpace(line[at:])
		out[f[2]+"\x00"+f[3]+"\x00"+msg] += n
	}
	if !in {
		t.Fatalf("no Errors table in the summary:\n%s", stdout)
	}
	return out
}
