package e2e

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/testserver"
)

// TestLoginFlowBehindProxy: the redirecting login flow with http.proxy
// (and credentials) runs on goroutines, every request of it in the
// proxy's log in absolute form with the proxy credentials, the same
// counts as without the proxy; --engine loop refuses the plan, naming
// the proxy.
func TestLoginFlowBehindProxy(t *testing.T) {
	t.Parallel()
	h, c := loginApp(t)
	srv := httpServer(t, h)
	px := testserver.NewForwardProxy(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	target := "http://app.invalid:" + port
	pxURL := "http://ann:pl4inT3xt@" + px.Listener.Addr().String()
	plan := e2etest.WritePlan(t, "target: "+target+"\nhttp: {proxy: '"+pxURL+"'}\n"+loginFlow, nil)
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-o", out)
	if o.Code != 0 {
		t.Fatalf("%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkLoginFlow(t, res, c)
	if res.Run.Engine != "goroutines" {
		t.Errorf("engine %q", res.Run.Engine)
	}
	const auth = " Basic YW5uOnBsNGluVDN4dA==" // ann:pl4inT3xt
	for _, k := range []string{"POST /login", "GET /dashboard", "POST /vote", "GET /thanks"} {
		method, path, _ := strings.Cut(k, " ")
		if got := px.Seen(method + " " + target + path + auth); got != c.get(k) || got == 0 {
			t.Errorf("the proxy saw %d %s in absolute form with the credentials, the server %d", got, k, c.get(k))
		}
	}
	if px.Lines() != res.Totals.Requests {
		t.Errorf("the proxy logged %d requests, the result counts %d", px.Lines(), res.Totals.Requests)
	}
	checkProxySecretHidden(t, out, "pl4inT3xt", strings.TrimPrefix(auth, " Basic "))
	before := px.Lines()
	plain := e2etest.WritePlan(t, "target: "+target+"\nhttp: {proxy: '"+pxURL+"'}\nscenarios: {s: {steps: [{get: /dashboard}]}}\nload: {stages: [{duration: 1s, users: 1}]}\n", nil)
	o = e2etest.Stampede(t, 60*time.Second, "", "run", plain, "--engine", "loop")
	if o.Code == 0 || !strings.Contains(o.Stderr, "its requests go through a proxy") || px.Lines() != before {
		t.Errorf("--engine loop on a proxied plan (the proxy saw %d more): %s", px.Lines()-before, o)
	}
}

// checkProxySecretHidden: neither the proxy's password nor its
// Proxy-Authorization token is in the result (its plan source) or in any
// report made from it.
func checkProxySecretHidden(t *testing.T, out string, secrets ...string) {
	t.Helper()
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"the result": string(raw)}
	for _, f := range []string{"text", "md", "html", "json", "junit"} {
		o := e2etest.Stampede(t, 60*time.Second, "", "report", out, "--format", f)
		if o.Code != 0 {
			t.Fatalf("report --format %s: %s", f, o)
		}
		texts["the "+f+" report"] = o.Stdout
	}
	for what, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds the proxy's secret %q", what, s)
			}
		}
	}
}

// TestLoginFlowBehindProxyHTTPS: the same flow over https with the proxy
// from HTTPS_PROXY: one CONNECT per connection the origin accepted, TLS
// to the origin inside (its certificate trusted through tls.ca_file) and
// HTTP/2 chosen by ALPN there, every hop counted and no failure.
func TestLoginFlowBehindProxyHTTPS(t *testing.T) {
	t.Parallel()
	h, c := loginApp(t)
	var notH2, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			notH2.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true // ALPN picks h2 inside the tunnel
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	px := testserver.NewForwardProxy(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	target := "https://app.invalid:" + port
	plan := e2etest.WritePlan(t, "target: "+target+"\ntls: {ca_file: ca.pem, server_name: example.com}\n"+loginFlow, map[string]string{"ca.pem": ca})
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Start(t, "", []string{"HTTPS_PROXY=" + px.URL, "NO_PROXY="}, "run", plan, "-o", out).Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Fatalf("%s", o)
	}
	res := e2etest.ReadResult(t, out)
	checkLoginFlow(t, res, c)
	connects := px.Seen("CONNECT app.invalid:" + port + " ")
	if connects == 0 || connects != conns.Load() || px.Lines() != connects {
		t.Errorf("the proxy saw %d CONNECTs (%d lines), the origin %d connections", connects, px.Lines(), conns.Load())
	}
	if notH2.Load() != 0 {
		t.Errorf("%d requests were not HTTP/2", notH2.Load())
	}
	if res.TLS == nil || res.TLS.Handshakes != connects {
		t.Errorf("tls %+v, want %d handshakes, one per tunnel", res.TLS, connects)
	}
}

// TestURLHonoursHTTPProxy: stampede url reads HTTP_PROXY as curl and k6
// do; every request it counts went through the proxy.
func TestURLHonoursHTTPProxy(t *testing.T) {
	t.Parallel()
	srv, c := statusServer(t)
	px := testserver.NewForwardProxy(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Start(t, "", []string{"HTTP_PROXY=" + px.URL, "NO_PROXY="}, "url", "-c", "2", "-d", "300ms", "-o", out, "http://app.invalid:"+port+"/ok").Wait(t, 60*time.Second)
	if o.Code != 0 {
		t.Fatalf("%s", o)
	}
	res := e2etest.ReadResult(t, out)
	n := px.Seen("GET http://app.invalid:" + port + "/ok ")
	if res.Totals.Requests == 0 || res.Totals.Failed != 0 || n != res.Totals.Requests || c.get("/ok") != n || res.Run.Engine != "goroutines" {
		t.Errorf("%d requests (%d failed, engine %s); the proxy saw %d, the server %d", res.Totals.Requests, res.Totals.Failed, res.Run.Engine, n, c.get("/ok"))
	}
}
