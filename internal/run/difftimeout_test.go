package run

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// A request answered after its timeout is a timeout on either engine, and
// one answered at once is ok. No clock decides which: the server answers
// /fast at once and holds /late until the client has given up on it (its
// connection closed, which only the client's timeout does), so how much
// later the loop's timer fires than the goroutines' (up to ~1 ms,
// engines.md) cannot change a count.
func TestEnginesTimeoutAfterTheAnswerIsHeld(t *testing.T) {
	needLoop(t)
	var held atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/late" {
			held.Add(1)
			<-r.Context().Done() // the client closed the connection
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		held.Store(0)
		r := runEngines(t, `
target: `+srv.URL+`
scenarios:
  s:
    steps:
      - {name: fast, get: /fast, timeout: 5s}
      - {name: late, get: /late, timeout: 50ms}
load: {grace: 5s, stages: [{duration: 300ms, users: 2}]}
`, engine)[0]
		fast, late := r.Steps[0], r.Steps[1]
		if fast.Name != "fast" || late.Name != "late" {
			t.Fatalf("%s: steps %q, %q", engine, fast.Name, late.Name)
		}
		if fast.Requests == 0 || fast.Successful != fast.Requests {
			t.Errorf("%s: fast: %d of %d ok (%v), want all", engine, fast.Successful, fast.Requests, fast.ByClass)
		}
		if late.Requests == 0 || late.ByClass["timeout"] != late.Requests || held.Load() == 0 {
			t.Errorf("%s: late: %d requests, %v; the server held %d: want every one a timeout",
				engine, late.Requests, late.ByClass, held.Load())
		}
		t.Logf("%s: fast %d ok, late %d timeouts, %d held", engine, fast.Successful, late.ByClass["timeout"], held.Load())
	}
}
