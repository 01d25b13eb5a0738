package e2e

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A TLS server whose every handshake takes at least hold: each
// ClientHello is looked at slowly, and no session is resumed. It answers
// at once. The config is set before the server starts, which reads it.
func slowHandshakeTLS(t *testing.T, dir string, hold time.Duration, h2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.EnableHTTP2 = h2
	srv.TLS = &tls.Config{SessionTicketsDisabled: true, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		time.Sleep(hold)
		return nil, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv
}

// A latency from the send leaves the TLS handshake out: it is a phase of
// its own, in the result's tls block (numbers.md). Requests here open
// their connection (every one, or each user's first on the event loop),
// whose handshake takes at least 300 ms, and are answered at once: each
// latency is under the shortest handshake. Before,
// every one held its handshake, on both engines and over HTTP/1.1 and
// HTTP/2 alike. An open model's latency, from when the request was due,
// holds everything it waited for: the handshake stays in it.
func TestSendLatencyLeavesTheHandshakeOut(t *testing.T) {
	const hold = 300 * time.Millisecond
	cases := []struct {
		name, version, conn, load, engine string
		keepsHandshake                    bool
	}{
		{"h2 goroutines", "auto", "per-request", "{stages: [{duration: 2s, users: 2}]}", "goroutines", false},
		{"http1.1 goroutines", "http/1.1", "per-request", "{stages: [{duration: 2s, users: 2}]}", "goroutines", false},
		// The loop keeps its connections: each user's first request
		// opens one.
		{"http1.1 event loop", "http/1.1", "keep-alive", "{stages: [{duration: 2s, users: 2}]}", "loop", false},
		{"open model", "http/1.1", "per-request", "{stages: [{duration: 2s, rate: 4/s}]}", "goroutines", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := slowHandshakeTLS(t, dir, hold, c.version == "auto")
			plan := e2etest.WritePlan(t, fmt.Sprintf(`
target: %s
tls: {ca_file: %q}
http: {connection: %s, version: %s}
scenarios:
  s: {steps: [{get: /}]}
load: %s
`, srv.URL, filepath.Join(dir, "ca.pem"), c.conn, c.version, c.load), nil)
			out := filepath.Join(dir, "r.json")
			o := e2etest.Stampede(t, 2*time.Minute, dir, "run", plan, "--engine", c.engine, "-o", out)
			if o.Code != 0 {
				t.Fatalf("exit %d\n%s", o.Code, o)
			}
			r := e2etest.ReadResult(t, out)
			if r.TLS == nil || r.TLS.Full == 0 || r.Totals.Requests == 0 || r.Totals.Failed != 0 {
				t.Fatalf("tls %+v, %d requests (%d failed): want every request on a handshake of its own", r.TLS, r.Totals.Requests, r.Totals.Failed)
			}
			if r.Run.Engine != c.engine {
				t.Fatalf("engine %q, want %q", r.Run.Engine, c.engine)
			}
			shortest, longest := r.TLS.Duration.MinUS, r.Totals.LatencyAll.MaxUS
			if shortest < hold.Microseconds() {
				t.Fatalf("shortest handshake %dµs, under the server's %v", shortest, hold)
			}
			if c.keepsHandshake {
				if r.Totals.LatencyAll.MinUS < hold.Microseconds() {
					t.Errorf("open model: shortest latency %dµs, under the %v handshake each request waited for", r.Totals.LatencyAll.MinUS, hold)
				}
				return
			}
			if longest >= shortest {
				t.Errorf("longest latency %dµs, shortest handshake %dµs: a handshake is in a latency from the send", longest, shortest)
			}
		})
	}
}
