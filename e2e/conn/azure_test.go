package conn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
)

// azurePlan is examples/azure-signalr.yaml pointed at app and cut to a
// few seconds: 30 displays, pinging often so that tokens run out.
func azurePlan(t *testing.T, app string, more ...[2]string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(e2etest.ModRoot, "examples", "azure-signalr.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, r := range append([][2]string{
		{"target: https://kitchen-app.example.com", "target: " + app},
		{"tenants: {count: 500}", "tenants: {count: 15}"},
		{"{duration: 1m, users: 0 -> 500}", "{duration: 500ms, users: 0 -> 15}"},
		{"{duration: 10m, users: 500}", "{duration: 4s, users: 15}"},
		{"      reconnect: 1s", "      reconnect: 200ms\n      keep_alive: 300ms"},
	}, more...) {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("examples/azure-signalr.yaml changed shape (no %q); update azurePlan", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	// The service's 429s are meant here: no thresholds.
	s, _, _ = strings.Cut(s, "thresholds:")
	path := filepath.Join(t.TempDir(), "azure-signalr.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The Azure SignalR Service flow through the binary, against the local
// imitation (sigtest.Azure): the app's negotiate redirects with a signed
// token; the service admits 20 connections of the 30 and answers the rest
// 429 with Retry-After; the first 10 tokens are refused after 12 requests,
// and their connections restart from the app's negotiate. What the
// servers counted is what the result says, over long polling (a poll or
// a send refused) and over an event stream (a send refused, the stream
// kept open as ASP.NET Core keeps it): each refusal is a token_refused
// disconnect whose restart is timed as "negotiate restart".
func TestAzureSignalRServiceThroughBinary(t *testing.T) {
	for _, tc := range []struct{ transport, plan string }{
		{"LongPolling", "long_polling"},
		{"ServerSentEvents", "sse"},
	} {
		t.Run(tc.plan, func(t *testing.T) {
			a := &sigtest.Azure{
				Hub:   &sigtest.Hub{Transports: []string{tc.transport}, PollHold: time.Second},
				Quota: 20, RetryAfter: time.Second,
				TokenUses: 12, LimitedTokens: 10,
			}
			a.Start()
			defer a.Close()
			plan := azurePlan(t, a.App.URL, [2]string{"transport: long_polling", "transport: " + tc.plan})
			checkAzureRun(t, a, plan)
		})
	}
}

func checkAzureRun(t *testing.T, a *sigtest.Azure, plan string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "res.json")
	o := e2etest.Stampede(t, 90*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "kitchen-display")
	first, redirect := step(t, r, "kitchen-display", "negotiate"), step(t, r, "kitchen-display", "negotiate redirect")
	restart := step(t, r, "kitchen-display", "negotiate restart")
	if hs := a.Hub.Handshakes.Load(); cs.Opened != hs || cs.Opened < 20 {
		t.Errorf("opened %d, the service answered %d handshakes", cs.Opened, hs)
	}
	if got := first.Requests + restart.Requests; got != a.Issued.Load() {
		t.Errorf("app negotiates: %d + %d restarts in the result, %d answered", first.Requests, restart.Requests, a.Issued.Load())
	}
	if redirect.Successful != a.Admitted.Load() || redirect.ByClass["rate_limited"] != a.OverQuota.Load() ||
		cs.ByClass["rate_limited"] != a.OverQuota.Load() || a.OverQuota.Load() == 0 {
		t.Errorf("service negotiates: %d admitted, %d over quota; result %+v, connection failures %v",
			a.Admitted.Load(), a.OverQuota.Load(), redirect, cs.ByClass)
	}
	if cs.TokenRefusals == 0 || cs.TokenRefusals > 10 || restart.Requests != cs.TokenRefusals || cs.TokenRefusals > a.Refused.Load() ||
		cs.Disconnects["token_refused"] != cs.TokenRefusals {
		t.Errorf("token refusals %d, token_refused disconnects %d, restarts %d, the service refused %d requests; disconnects %v",
			cs.TokenRefusals, cs.Disconnects["token_refused"], restart.Requests, a.Refused.Load(), cs.Disconnects)
	}
	t.Logf("opened %d; app negotiates %d (%d restarts); service: %d admitted, %d over quota, %d requests refused; token refusals %d; disconnects %v",
		cs.Opened, a.Issued.Load(), restart.Requests, a.Admitted.Load(), a.OverQuota.Load(), a.Refused.Load(), cs.TokenRefusals, cs.Disconnects)
	if !strings.Contains(o.Stdout, "ended by a refused access token, restarted") {
		t.Errorf("summary:\n%s", o.Stdout)
	}
}

// TestAzureWebSocketTokenInQuery: access_token_in: query reaches the
// client: every WebSocket upgrade carries the redirect's token in its
// URL's query and not in a header (the default is the header, as
// internal/proto/signalr's TestWebSocketTokenPlace shows).
func TestAzureWebSocketTokenInQuery(t *testing.T) {
	a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"WebSockets"}}, Record: true}
	a.Start()
	defer a.Close()
	plan := azurePlan(t, a.App.URL, [2]string{"transport: long_polling", "transport: websockets\n      access_token_in: query"})
	out := filepath.Join(t.TempDir(), "res.json")
	if o := e2etest.Stampede(t, 90*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q"); o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	upgrades := 0
	for _, l := range a.Requests() {
		if !strings.HasPrefix(l, "service GET ") {
			continue
		}
		upgrades++
		if !strings.Contains(l, "access_token=token+") || !strings.Contains(l, " auth=none ") {
			t.Errorf("upgrade %q: want the token in the query only", l)
		}
	}
	if cs := conns(t, e2etest.ReadResult(t, out), "kitchen-display"); upgrades == 0 || int64(upgrades) != cs.Opened {
		t.Errorf("%d upgrades seen, %d connections opened", upgrades, cs.Opened)
	}
}
