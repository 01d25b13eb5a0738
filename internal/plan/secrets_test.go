package plan

import (
	"encoding/base64"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mustParse(t *testing.T, src string, env map[string]string) *Plan {
	t.Helper()
	p, err := Parse("p.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p
}

func header(hs []Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value.String(&Env{})
		}
	}
	return ""
}

// The target's user:password leave the target and become Basic
// authentication on the requests that go to it, and on connections to
// it, never on an absolute URL elsewhere; a step's own Authorization wins.
func TestTargetCredentials(t *testing.T) {
	p := mustParse(t, `target: http://alice:${PASS}@127.0.0.1:8080/api/
scenarios:
  s:
    steps:
      - get: /a
      - get: http://other.example/b
      - {get: /c, headers: {authorization: Bearer x}}
  hub:
    users: 1
    signalr: {url: /hubs/h}
  ws:
    users: 1
    websocket: {url: ws://other.example/w}
load: {stages: [{duration: 1s, users: 1}]}
`, map[string]string{"PASS": "p@ss:word"})
	if p.Target != "http://127.0.0.1:8080/api" {
		t.Errorf("Target = %q, want it without credentials", p.Target)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:p@ss:word"))
	st := p.Scenarios[0].Steps
	if got := header(st[0].Headers, "Authorization"); got != want {
		t.Errorf("relative step: Authorization = %q, want %q", got, want)
	}
	if got := header(st[1].Headers, "Authorization"); got != "" {
		t.Errorf("absolute step to another host got Authorization %q", got)
	}
	if got := header(st[2].Headers, "Authorization"); got != "Bearer x" {
		t.Errorf("step's own Authorization = %q, want Bearer x", got)
	}
	if got := header(p.Scenarios[1].Connection.Spec().SignalR.Headers, "Authorization"); got != want {
		t.Errorf("relative hub URL: Authorization = %q, want %q", got, want)
	}
	if got := header(p.Scenarios[2].Connection.Spec().WebSocket.Headers, "Authorization"); got != "" {
		t.Errorf("absolute websocket URL got Authorization %q", got)
	}
	// Joined to the target's path; connection URLs are joined to the
	// whole target when a population connects, so they stay as written.
	if got := st[0].URL.String(&Env{}); got != "/api/a" {
		t.Errorf("relative step URL = %q, want /api/a", got)
	}
	if got := st[1].URL.String(&Env{}); got != "http://other.example/b" {
		t.Errorf("absolute step URL = %q", got)
	}
	if got := p.Scenarios[1].Connection.Spec().SignalR.URL.String(&Env{}); got != "/hubs/h" {
		t.Errorf("hub URL = %q, want /hubs/h", got)
	}
	if got := p.Redact("auth failed for alice:p@ss:word"); strings.Contains(got, "p@ss:word") {
		t.Errorf("Redact left the target's password: %q", got)
	}
}

// The target's path is joined before a step's templated path, and a
// target without a path changes nothing.
func TestTargetPathJoin(t *testing.T) {
	p := mustParse(t, `target: http://h/v1
vars: {id: "a b"}
scenarios:
  s:
    steps:
      - get: "/{{ vars.id }}/x?q={{ vars.id }}"
      - get: /
load: {stages: [{duration: 1s, users: 1}]}
`, nil)
	st := p.Scenarios[0].Steps
	if got := st[0].URL.String(&Env{}); got != "/v1/a%20b/x?q=a+b" {
		t.Errorf("url = %q", got)
	}
	if got := st[1].URL.String(&Env{}); got != "/v1/" {
		t.Errorf("url = %q", got)
	}
	if st[0].Name != "GET /{{ vars.id }}/x?q={{ vars.id }}" {
		t.Errorf("name = %q: a step's default name is its URL as written", st[0].Name)
	}
	p = mustParse(t, "target: http://h\nscenarios: {s: {steps: [{get: /x}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n", nil)
	if got := p.Scenarios[0].Steps[0].URL.String(&Env{}); got != "/x" {
		t.Errorf("url = %q", got)
	}
}

// Every value taken from the environment is hidden by Redact, in the
// forms messages carry it (quoted by %q, escaped in a URL); the target's
// own text is not (it is shown by design), nor are values too short to
// tell from ordinary text.
func TestRedact(t *testing.T) {
	p := mustParse(t, `target: ${BASE}
scenarios:
  s:
    steps:
      - get: "/x?token=${TOKEN}"
        expect: {body_contains: "${CHECK}"}
load:
  stages:
    - duration: 1s
      users: ${USERS}
`, map[string]string{"BASE": "http://127.0.0.1:9", "TOKEN": "t0k en/+", "CHECK": `Check"Secret999`, "USERS": "10"})
	cases := map[string]string{
		`body does not contain "Check\"Secret999"`:      `body does not contain "[redacted]"`,
		`raw Check"Secret999 here`:                      `raw [redacted] here`,
		`Get "http://127.0.0.1:9/x?token=t0k+en%2F%2B"`: `Get "http://127.0.0.1:9/x?token=[redacted]"`,
		`path /t0k%20en%2F+`:                            `path /[redacted]`,
		// As JSON encoders escape it: PHP's "\/", ASP.NET's \u002B.
		`{"token":"t0k en\/+"}`:            `{"token":"[redacted]"}`,
		`{"token":"t0k en/\u002B"}`:        `{"token":"[redacted]"}`,
		`{"check":"Check\u0022Secret999"}`: `{"check":"[redacted]"}`,
		`10 users, got 100`:                `10 users, got 100`,
		// A message shortened inside a secret keeps no part of it.
		`401 Unauthorized: bad token Check"Sec…`: `401 Unauthorized: bad token [redacted]…`,
		`bad token Che…`:                         `bad token Che…`, // 3 bytes: too short to count
		// Messages collapse white space; the secret is found in that form.
		`body does not contain t0k en/+ and more`: `body does not contain [redacted] and more`,
	}
	for in, want := range cases {
		if got := p.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	var nilPlan *Plan
	if nilPlan.Redact("x") != "x" {
		t.Error("a nil plan must redact nothing")
	}
}

// A data file or a plan that is not a regular file is refused before it
// is opened: opening a FIFO blocks until a writer comes.
func TestNotRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "rows.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	plan := filepath.Join(dir, "p.yaml")
	os.WriteFile(plan, []byte("target: http://h\ndata: {d: {file: rows.csv}}\nscenarios: {s: {steps: [{get: \"/{{ data.d.id }}\"}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n"), 0o644)
	_, err := LoadFileWith(plan, LoadOptions{})
	var pe *Error
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "p.yaml:2:") || !strings.Contains(err.Error(), "rows.csv is a named pipe (FIFO), not a regular file") {
		t.Errorf("data file FIFO: got %v", err)
	}
	if _, err := LoadFileWith(fifo, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("plan FIFO: got %v", err)
	}
	if _, err := LoadFileWith(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "is a directory, not a regular file") {
		t.Errorf("plan directory: got %v", err)
	}
}

// CheckFit measures one process's share of the peak against the
// open-files limit less ReservedFiles, and says how many processes would
// fit.
func TestCheckFit(t *testing.T) {
	closed := mustParse(t, `target: http://h
tenants: {count: 10}
scenarios:
  s: {steps: [{get: /}]}
  hub: {per_tenant: 100, signalr: {url: /h}}
load: {stages: [{duration: 1s, users: 0 -> 3000}, {duration: 1s, users: 1000}]}
`, nil)
	if k := closed.PeakOf(1); k.HTTP != 3000 || k.Conns != 1000 || k.Files() != 4000 {
		t.Errorf("PeakOf(1) = %+v", k)
	}
	if k := closed.PeakOf(3); k.HTTP != 1000 || k.Conns != 334 {
		t.Errorf("PeakOf(3) = %+v", k)
	}
	if err := closed.CheckFit(1, 4000+ReservedFiles); err != nil {
		t.Errorf("fits exactly: %v", err)
	}
	err := closed.CheckFit(1, 4000+ReservedFiles-1)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:6:") || !strings.Contains(err.Error(), "3,000 users and 1,000 persistent connections need 4,000 open connections") || !strings.Contains(err.Error(), "--workers 2 ") {
		t.Errorf("one over: %v", err)
	}
	if err := closed.CheckFit(2, 2000+ReservedFiles); err != nil {
		t.Errorf("half each in 2 processes fits: %v", err)
	}
	if err := closed.CheckFit(1, math.MaxUint64); err != nil {
		t.Errorf("no limit: %v", err)
	}

	open := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load:
  max_in_flight: 5000
  stages: [{duration: 1s, rate: 3000000/s}]
`, nil)
	err = open.CheckFit(1, 1000)
	if err == nil || !strings.Contains(err.Error(), "p.yaml:4:18: 5,000 iterations in flight") || !strings.Contains(err.Error(), "lower max_in_flight") ||
		!strings.Contains(err.Error(), "p.yaml:5:") || !strings.Contains(err.Error(), "--workers 3 ") {
		t.Errorf("open: %v", err)
	}
	if err := open.CheckFit(3, 5000); err != nil {
		t.Errorf("open in 3 processes: %v", err)
	}
	// max_conns_per_host bounds a closed model's connections when every
	// request goes to the target.
	capped := mustParse(t, `target: http://h
http: {max_connections_per_host: 100}
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, users: 50000}]}
`, nil)
	if k := capped.PeakOf(1); k.HTTP != 100 {
		t.Errorf("capped PeakOf = %+v", k)
	}
	// An open model that leaves max_in_flight at its default is not
	// refused for it: the default is a safety cap, lowered to fit.
	dflt := mustParse(t, `target: http://h
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1s, rate: 100/s}]}
`, nil)
	if err := dflt.CheckFit(2, 1024); err != nil {
		t.Errorf("default max_in_flight under a 1024-file limit: %v", err)
	}
	// CheckFit judges the lowered cap; lowering it is the caller's.
	dflt.LowerToFit(2, 1024)
	if got, want := dflt.Load.MaxInFlight, 2*(1024-ReservedFiles); got != want {
		t.Errorf("default max_in_flight lowered to %d, want %d (two processes of %d)", got, want, 1024-ReservedFiles)
	}
}
