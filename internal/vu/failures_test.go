package vu

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
)

const conflictAnswer = "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 35\r\n\r\n{\"error\":\"voter has already voted\"}"

const votePlan = `
scenarios:
  s:
    steps:
      - name: vote
        post: /votes
        expect: {status: 201}
load: {stages: [{duration: 1s, users: 1}]}
`

func recUserFor(tb testing.TB, yaml, base string, o metrics.ErrorOptions) (*User, *Scenario, *metrics.Recorder) {
	p, err := plan.Parse("t.yaml", []byte("target: "+base+"\n"+yaml), nil)
	if err != nil {
		tb.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/test", nil)
	if err != nil {
		tb.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	rec.Configure(o)
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{}).NewTransport(), rec)
	tb.Cleanup(u.Close)
	return u, prog.ScenarioFor(0), rec
}

// A step's failure says what the server answered, status and body, with
// the exact count; successes' statuses are counted as well.
func TestFailureMessageIsTheServersAnswer(t *testing.T) {
	base := cannedServer(t, conflictAnswer)
	u, sc, rec := recUserFor(t, votePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < 7; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
	st := rec.Snapshot().Steps[0]
	want := []result.StepError{{Class: "client_error", Status: 409, Message: `409 Conflict: {"error":"voter has already voted"}`, Count: 7}}
	if len(st.Errors) != 1 || st.Errors[0] != want[0] {
		t.Fatalf("errors = %+v, want %+v", st.Errors, want)
	}
	if st.Statuses["409"] != 7 || len(st.Statuses) != 1 {
		t.Fatalf("statuses = %v, want 409: 7", st.Statuses)
	}
	if err := st.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
}

// An HTML error page shows its words, not its markup, and a check says
// what it expected in plain words.
func TestFailureMessagesOfHTMLPagesAndChecks(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(503)
			w.Write([]byte("<!DOCTYPE html>\n<html><head><title>Busy</title></head>\n<body><h1>Pool exhausted</h1>\n  <p>try later</p></body></html>"))
		case "/ok":
			w.Write([]byte(`{"status":"rejected"}`))
		}
	}))
	defer srv.Close()
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: busy, get: /busy}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	got := rec.Snapshot().Steps[0].Errors
	if len(got) != 1 || got[0].Message != "503 Service Unavailable: Busy Pool exhausted try later" || got[0].Class != "server_error" {
		t.Fatalf("errors = %+v", got)
	}

	u, sc, rec = recUserFor(t, `
scenarios:
  s:
    steps:
      - {name: ok, get: /ok, expect: {json: {status: counted}}}
load: {stages: [{duration: 1s, users: 1}]}
`, srv.URL, metrics.ErrorOptions{})
	u.Iterate(sc, time.Time{}, stop)
	u.Iterate(sc, time.Time{}, stop)
	st := rec.Snapshot().Steps[0]
	if len(st.Errors) != 1 || st.Errors[0].Message != `json status: expected "counted", got "rejected"` || st.Errors[0].Count != 2 || st.Errors[0].Status != 200 {
		t.Fatalf("errors = %+v", st.Errors)
	}
	if st.Statuses["200"] != 2 {
		t.Fatalf("statuses = %v", st.Statuses)
	}
}

// --keep-failures writes whole exchanges, at most N per step, with the
// credentials redacted.
func TestFailureSamplesAreBoundedAndRedacted(t *testing.T) {
	base := cannedServer(t, conflictAnswer)
	path := filepath.Join(t.TempDir(), "r.failures.jsonl")
	log, err := metrics.OpenFailureLog(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	u, sc, _ := recUserFor(t, `
scenarios:
  s:
    steps:
      - name: vote
        post: /votes
        headers: {Authorization: "Bearer s3cr3t-token", X-Trace: "t-1"}
        body: '{"voter":42}'
        expect: {status: 201}
load: {stages: [{duration: 1s, users: 1}]}
`, base, metrics.ErrorOptions{Failures: log})
	stop := Stop{Soft: make(chan struct{})}
	for i := 0; i < 10; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cr3t") {
		t.Fatalf("the token leaked into the samples:\n%s", data)
	}
	var lines []metrics.Exchange
	sc2 := bufio.NewScanner(strings.NewReader(string(data)))
	for sc2.Scan() {
		var x metrics.Exchange
		if err := json.Unmarshal(sc2.Bytes(), &x); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, x)
	}
	if len(lines) != 3 {
		t.Fatalf("%d samples, want 3 (the step's share)", len(lines))
	}
	x := lines[0]
	if x.Step != "vote" || x.Class != "client_error" || x.Request.Method != "POST" || x.Request.Body != `{"voter":42}` ||
		x.Response == nil || x.Response.Status != 409 || x.Response.Body != `{"error":"voter has already voted"}` ||
		x.Message != `409 Conflict: {"error":"voter has already voted"}` || !strings.HasSuffix(x.Request.URL, "/votes") {
		t.Fatalf("sample = %+v", x)
	}
	var auth, trace string
	for _, h := range x.Request.Headers {
		switch h[0] {
		case "Authorization":
			auth = h[1]
		case "X-Trace":
			trace = h[1]
		}
	}
	if auth != metrics.Redacted || trace != "t-1" {
		t.Fatalf("headers = %v", x.Request.Headers)
	}
}

// A failure the shard has seen allocates nothing: the message is built in
// the user's buffer and found in the table without a string.
func TestRepeatedFailureDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	base := cannedServer(t, conflictAnswer)
	u, sc, rec := recUserFor(t, votePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	allocs := testing.AllocsPerRun(200, func() { u.Iterate(sc, time.Time{}, stop) })
	if allocs != 0 {
		t.Fatalf("%.1f allocs per repeated failure, want 0", allocs)
	}
	if n := rec.Snapshot().Steps[0].Errors[0].Count; n != 202 {
		t.Fatalf("count = %d, want 202", n)
	}
}

// BenchmarkIterationRepeatedFailure is a step failing with the same 409
// and body every time: after the first, 0 allocs/op.
func BenchmarkIterationRepeatedFailure(b *testing.B) {
	base := cannedServer(b, conflictAnswer)
	u, sc, _ := recUserFor(b, votePlan, base, metrics.ErrorOptions{})
	stop := Stop{Soft: make(chan struct{})}
	u.Iterate(sc, time.Time{}, stop)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u.Iterate(sc, time.Time{}, stop)
	}
}

// HTTPS answers go through net/http; their failed bodies are kept too.
func TestFailureMessageOverHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"voter has already voted"}`))
	}))
	defer srv.Close()
	p, err := plan.Parse("t.yaml", []byte("target: "+srv.URL+"\n"+votePlan), nil)
	if err != nil {
		t.Fatal(err)
	}
	conf := &tls.Config{InsecureSkipVerify: true}
	prog, err := Compile(p, srv.URL, "stampede/test", conf)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	u := prog.NewUser(1, httpc.NewShared(httpc.Options{TLS: conf}).NewTransport(), rec)
	defer u.Close()
	u.Iterate(prog.ScenarioFor(0), time.Time{}, Stop{Soft: make(chan struct{})})
	got := rec.Snapshot().Steps[0].Errors
	if len(got) != 1 || got[0].Message != `409 Conflict: {"error":"voter has already voted"}` {
		t.Fatalf("errors = %+v", got)
	}
}

// A failing check or capture the shard has seen allocates nothing either:
// its explanation is built in the user's buffer, not with fmt.
func TestRepeatedCheckFailureDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	const okAnswer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"
	for name, c := range map[string]struct{ expect, want string }{
		"status":  {"expect: {status: [201, 4xx]}", "expected status 201 or 4xx, got 200"},
		"body":    {"expect: {body_contains: counted}", `body does not contain "counted"`},
		"capture": {"capture: {id: {regex: 'id=(\\d+)'}}", `capture "id" found nothing`},
	} {
		t.Run(name, func(t *testing.T) {
			base := cannedServer(t, okAnswer)
			yaml := "scenarios:\n  s:\n    steps:\n      - name: get\n        get: /\n        " + c.expect + "\nload: {stages: [{duration: 1s, users: 1}]}\n"
			u, sc, rec := recUserFor(t, yaml, base, metrics.ErrorOptions{})
			stop := Stop{Soft: make(chan struct{})}
			u.Iterate(sc, time.Time{}, stop)
			allocs := testing.AllocsPerRun(100, func() { u.Iterate(sc, time.Time{}, stop) })
			if allocs != 0 {
				t.Errorf("%.1f allocs per repeated failure, want 0", allocs)
			}
			errs := rec.Snapshot().Steps[0].Errors
			if len(errs) != 1 || errs[0].Message != c.want || errs[0].Count != 102 {
				t.Errorf("errors %+v, want one message %q counted 102 times", errs, c.want)
			}
		})
	}
}
