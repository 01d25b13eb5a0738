package e2e

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestHTTPSUsersResumeTheirSessions: through the binary, HTTPS users
// speak HTTP/1.1 on connections of their own, a new one per request here
// (connection: per-request), and each user's later handshakes resume its
// first session. The result's tls block counts exactly the handshakes
// the server saw besides the preflight's (3 full, one per user, the rest
// resumed), and the text
// report shows them on one line.
func TestHTTPSUsersResumeTheirSessions(t *testing.T) {
	var requests, conns, resumed, full atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(r.Proto))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{VerifyConnection: func(cs tls.ConnectionState) error {
		if cs.DidResume {
			resumed.Add(1)
		} else {
			full.Add(1)
		}
		return nil
	}}
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	plan := e2etest.WritePlan(t, `
target: `+srv.URL+`
tls: {insecure: true}
http: {connection: per-request}
scenarios:
  s:
    steps:
      - {get: /, expect: {status: 200, body_contains: "HTTP/1.1"}}
      - think: 50ms
load: {stages: [{duration: 1s, users: 3}]}
`, nil)
	out := filepath.Join(dir, "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("exit %d\n%s", o.Code, o)
	}
	res := e2etest.ReadResult(t, out)
	checkSums(t, res)
	tt := res.Totals
	if tt.Requests == 0 || tt.Failed != 0 || tt.Requests != requests.Load() {
		t.Errorf("requests %d (%d failed), the server answered %d", tt.Requests, tt.Failed, requests.Load())
	}
	tl := res.TLS
	if tl == nil {
		t.Fatalf("no tls block in the result")
	}
	// The server also saw the run's one preflight handshake (a full
	// one, before the load), which carries no request.
	if tl.Handshakes+1 != conns.Load() || tl.Full+1 != full.Load() || tl.Resumed != resumed.Load() || tl.Failed != 0 {
		t.Errorf("tls %+v; the server saw %d connections, %d full and %d resumed handshakes (one of them the preflight's)", *tl, conns.Load(), full.Load(), resumed.Load())
	}
	if tl.Full != 3 || tl.Resumed != tl.Handshakes-3 || tl.Resumed == 0 {
		t.Errorf("tls %+v, want 3 full handshakes (one per user) and every later one resumed", *tl)
	}
	if tl.Handshakes != tt.Requests {
		t.Errorf("%d handshakes for %d requests, each on its own connection", tl.Handshakes, tt.Requests)
	}
	if !strings.Contains(o.Stdout, "TLS handshakes: ") {
		t.Errorf("the text report has no TLS line:\n%s", o.Stdout)
	}
}
