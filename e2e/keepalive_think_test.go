package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestKeepAliveSurvivesThinkLongerThanTimeout: users that think longer than
// their request timeout keep their connections. Before, the previous
// request's passed deadline made the reuse check fail, so every request
// dialled a new connection (connect time in latencies, server churn).
func TestKeepAliveSurvivesThinkLongerThanTimeout(t *testing.T) {
	t.Parallel()
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	const users = 2
	plan := e2etest.WritePlan(t, fmt.Sprintf(`name: keepalive-think
target: %s
scenarios:
  s:
    steps:
      - {name: ok, get: /ok, timeout: 300ms, expect: {status: 200}}
      - think: 500ms
load:
  stages: [{duration: 2500ms, users: %d}]
`, srv.URL, users), nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0:\n%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	st := stepOf(t, res, "s", "ok")
	// One connection per user, and one more for a check before the load
	// if the binary makes one; the requests must outnumber them for the
	// count to tell reuse from a dial per request.
	if st.Requests <= users+1 {
		t.Skipf("only %d requests in 2.5s on this machine: too few to tell reuse from redialling", st.Requests)
	}
	if n := opened.Load(); n > users+1 {
		t.Errorf("%d requests by %d users thinking 500ms past a 300ms timeout opened %d connections, want at most %d", st.Requests, users, n, users+1)
	}
}
