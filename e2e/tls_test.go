package e2e

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	kitlog "github.com/go-kit/log"
	"github.com/philippseith/signalr"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// tlsHub is a hub of philippseith/signalr, a third-party implementation of
// the ASP.NET Core server side.
type tlsHub struct{ signalr.Hub }

func (h *tlsHub) Join(id string) string { return "joined " + id }

// h2Server is a TLS server that speaks HTTP/2 to clients offering it, as
// ASP.NET Core hosts and Azure SignalR Service do: plain HTTPS on /api, a
// WebSocket echo on /feed, a SignalR hub on /hubs/kitchen. httpReqs counts
// the /api requests. It writes its certificate to ca.pem in dir.
func h2Server(t *testing.T, dir string) (srv *httptest.Server, httpReqs *atomic.Int64) {
	t.Helper()
	httpReqs = &atomic.Int64{}
	ctx, cancel := context.WithCancel(context.Background())
	hub, err := signalr.NewServer(ctx, signalr.SimpleHubFactory(&tlsHub{}),
		signalr.Logger(kitlog.NewNopLogger(), false), signalr.KeepAliveInterval(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	hub.MapHTTP(signalr.WithHTTPServeMux(mux), "/hubs/kitchen")
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		httpReqs.Add(1)
		io.WriteString(w, r.Proto)
	})
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if c.Write(r.Context(), typ, b) != nil {
				return
			}
		}
	})
	srv = httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		cancel()
		srv.CloseClientConnections()
		srv.Close()
	})
	if dir != "" {
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(filepath.Join(dir, "ca.pem"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return srv, httpReqs
}

func connOf(t *testing.T, r *result.Result, name string) result.ConnScenario {
	t.Helper()
	if r.Connections != nil {
		for _, s := range r.Connections.Scenarios {
			if s.Scenario == name {
				return s
			}
		}
	}
	t.Fatalf("no connection scenario %q in the result", name)
	return result.ConnScenario{}
}

// checkConnLedger checks what holds for every connection population of a
// finished run: attempts = opened + failed, failed = the sum by class, and
// opened = open at the end + disconnects (each connection ends once,
// either during the run, by its reason, or open at the end).
func checkConnLedger(t *testing.T, cs result.ConnScenario) {
	t.Helper()
	var byClass, disc int64
	for _, n := range cs.ByClass {
		byClass += n
	}
	for _, n := range cs.Disconnects {
		disc += n
	}
	if cs.Opened+cs.Failed != cs.Attempts || byClass != cs.Failed {
		t.Errorf("%s: attempts %d, opened %d, failed %d, by class %v", cs.Scenario, cs.Attempts, cs.Opened, cs.Failed, cs.ByClass)
	}
	if cs.Opened != cs.OpenAtEnd+disc {
		t.Errorf("%s: opened %d != open at end %d + disconnects %d %v", cs.Scenario, cs.Opened, cs.OpenAtEnd, disc, cs.Disconnects)
	}
}

// wss beside HTTPS load against a server that speaks HTTP/2 (item 5 of
// issue 12): the HTTPS users, a WebSocket script and a SignalR hub all
// share the plan's tls settings. net/http adds "h2" to the config it is
// given; when that config was the one the WebSocket dialer used, every
// upgrade went out over h2 and failed (counted as conn_reset or other).
func TestWSSBesideHTTPSAgainstHTTP2Server(t *testing.T) {
	dir := t.TempDir()
	srv, httpReqs := h2Server(t, dir)
	wss := "wss" + strings.TrimPrefix(srv.URL, "https")
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`
target: `+srv.URL+`
tls: {ca_file: ca.pem}
scenarios:
  api:
    steps:
      - {get: /api, expect: {status: 200, body_contains: "HTTP/2.0"}}
      - think: 20ms
  feed:
    users: 3
    websocket:
      url: `+wss+`/feed
      steps:
        - send: hello
        - wait: {regex: "^hello$", timeout: 5s}
        - hold: run
  display:
    users: 3
    signalr:
      url: /hubs/kitchen
      invoke: [{method: Join, args: ["{{ vu }}"], timeout: 5s}]
load: {grace: 2s, stages: [{duration: 2s, users: 2}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 90*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	// Connection steps are not requests: the totals are the HTTPS step's.
	api := stepOf(t, r, "api", "GET /api")
	if api.Requests == 0 || api.Failed != 0 || api.Requests != r.Totals.Requests || r.Totals.Failed != 0 || httpReqs.Load() < api.Requests {
		t.Errorf("HTTPS step %+v, totals %+v (server saw %d)", api, r.Totals, httpReqs.Load())
	}
	for _, name := range []string{"feed", "display"} {
		cs := connOf(t, r, name)
		checkConnLedger(t, cs)
		if cs.Opened != 3 || cs.Failed != 0 || cs.OpenAtEnd != 3 {
			t.Errorf("%s: %+v", name, cs)
		}
	}
}

// SignalR alone over wss against the HTTP/2 hub: negotiate (which may use
// h2) and the upgrade shared one config, so even without HTTPS users the
// upgrade went out over h2 and every connection failed.
func TestSignalRAloneOverWSSAgainstHTTP2Server(t *testing.T) {
	dir := t.TempDir()
	srv, _ := h2Server(t, dir)
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte(`
target: `+srv.URL+`
tls: {ca_file: ca.pem}
scenarios:
  display:
    users: 4
    signalr:
      url: /hubs/kitchen
      invoke: [{method: Join, args: ["{{ vu }}"], timeout: 5s}]
load: {stages: [{duration: 1s, users: 1}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	cs := connOf(t, e2etest.ReadResult(t, out), "display")
	checkConnLedger(t, cs)
	if cs.Opened != 4 || cs.Failed != 0 || cs.OpenAtEnd != 4 {
		t.Errorf("%+v", cs)
	}
}

// An https target whose certificate this machine does not trust (item 10
// of issue 12): exit 3 before any load, with the certificate error and the
// fix, instead of a whole run of `tls` failures read as overload. With the
// fix applied (tls.ca_file) the same plan runs.
func TestUntrustedCertificateStopsBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	srv, httpReqs := h2Server(t, dir)
	body := `
scenarios:
  api: {steps: [{get: /api}]}
load: {stages: [{duration: 1s, users: 2}]}
`
	plan := filepath.Join(dir, "plan.yaml")
	os.WriteFile(plan, []byte("target: "+srv.URL+body), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 3 {
		t.Fatalf("want exit 3\n%s", o)
	}
	for _, want := range []string{"certificate", srv.URL, "Nothing was sent", "tls.ca_file", "tls.insecure"} {
		if !strings.Contains(o.Stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, o)
		}
	}
	if n := httpReqs.Load(); n != 0 {
		t.Errorf("the server got %d requests before the run gave up", n)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a result was written for a run that never started")
	}

	// The fix the message names works.
	os.WriteFile(plan, []byte("target: "+srv.URL+"\ntls: {ca_file: ca.pem}"+body), 0o644)
	o = e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 0 || httpReqs.Load() == 0 {
		t.Fatalf("with tls.ca_file: want exit 0 and requests (server saw %d)\n%s", httpReqs.Load(), o)
	}
}

// The same check for a wss connection URL on another host than the
// target: the target (plain http) is fine, the hub's certificate is not.
func TestUntrustedWSSConnectionStopsBeforeLoad(t *testing.T) {
	dir := t.TempDir()
	srv, httpReqs := h2Server(t, "")
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpReqs.Add(1) }))
	t.Cleanup(api.Close)
	wss := "wss" + strings.TrimPrefix(srv.URL, "https") + "/feed"
	plan := e2etest.WritePlan(t, `
target: `+api.URL+`
scenarios:
  api: {steps: [{get: /}]}
  feed:
    users: 2
    websocket: {url: "`+wss+`", steps: [{send: hi}, {hold: run}]}
load: {stages: [{duration: 1s, users: 1}]}
`, nil)
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", filepath.Join(dir, "res.json"), "-q")
	if o.Code != 3 {
		t.Fatalf("want exit 3\n%s", o)
	}
	// The address is named by scheme and host only: a connection URL's
	// path and query may carry a token.
	host := strings.TrimSuffix(wss, "/feed")
	for _, want := range []string{"certificate", host + ":", "tls.ca_file"} {
		if !strings.Contains(o.Stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, o)
		}
	}
	if n := httpReqs.Load(); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
