package conn

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
)

// Stateful reconnect through the binary: the TCP connections of two
// kitchen displays are cut under a running hub (sigtest's, written from
// the aspnetcore HubProtocol and TransportProtocols specs: no third-party
// Go hub here speaks Ack and Sequence) while pushes are in flight. Each
// display resumes with the same connection token, the hub resends what
// was not acknowledged, and the result counts every push exactly once,
// two resumes, nothing lost, and no disconnect.
func TestStatefulReconnectThroughBinary(t *testing.T) {
	const users, K, M = 2, 3, 4
	h := &sigtest.Hub{Transports: []string{"WebSockets"}, StatefulReconnect: true, KeepAlive: time.Second}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	p := sigtest.NewCutProxy(t, srv.Listener.Addr().String())
	dir := t.TempDir()
	plan := filepath.Join(dir, "stateful.yaml")
	os.WriteFile(plan, []byte(`
target: http://`+p.Addr()+`
scenarios:
  display:
    users: `+string(rune('0'+users))+`
    signalr:
      url: /hub
      stateful_reconnect: true
      invoke: [{method: JoinRestaurant, args: ["1"], timeout: 5s}]
      listen: [OrderPlaced]
load: {stages: [{duration: 60s, users: 1}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	proc := e2etest.Start(t, dir, nil, "run", plan, "-o", out, "-q")

	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\n%s", what, proc.Stderr())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Both displays joined: the join's Completion is the only sequenced
	// message the hub has sent each of them, and it is acknowledged once
	// the hub holds nothing unacknowledged.
	wait("both displays to join", func() bool { return h.Open() == users && h.Unacked() == 0 && joined(h) })
	for i := 0; i < K; i++ {
		h.PlaceOrder("1", i)
	}
	// The displays acknowledge within their Ack interval (1s).
	wait("the K pushes acknowledged", func() bool { return h.Unacked() == 0 })
	p.Swallow()
	for i := 0; i < M; i++ {
		h.PlaceOrder("1", 100+i)
	}
	p.Cut()
	wait("both resumes", func() bool { return h.Reconnects.Load() == users })
	wait("the resent pushes acknowledged", func() bool { return h.Unacked() == 0 })
	proc.Signal(t, os.Interrupt)
	o := proc.Wait(t, 60*time.Second)
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "display")
	if cs.Opened != users || cs.Failed != 0 || len(cs.Disconnects) != 0 {
		t.Errorf("connections %+v\n%s", cs, o)
	}
	if cs.Pushes["OrderPlaced"] != users*(K+M) || h.Pushes.Load() != users*(K+M) {
		t.Errorf("pushes counted %d, hub sent %d; want %d", cs.Pushes["OrderPlaced"], h.Pushes.Load(), users*(K+M))
	}
	if cs.Reconnects != users || cs.ReconnectFailures != 0 || cs.Recovered != 0 || cs.Duplicates != 0 || cs.Lost != 0 {
		t.Errorf("stateful reconnect: %+v", cs)
	}
	want := "Stateful reconnect: 2 resumed, 0 failed; messages 0 recovered, 0 duplicates skipped, 0 lost"
	if !strings.Contains(o.Stdout, want) {
		t.Errorf("summary lacks %q\n%s", want, o)
	}
}

// joined: every open connection of the hub has had its join answered.
func joined(h *sigtest.Hub) bool { return h.Joined() == h.Open() }

// Azure SignalR Service's shape through the binary: the app's negotiate
// redirects to the service with a JWT living about two seconds, which the
// service checks on every request. Two long-polling displays held for a
// few seconds renew their tokens before they expire (each renewal one
// more negotiation at the app), every poll succeeds, and the summary says
// how many tokens were renewed.
func TestAccessTokenRenewalThroughBinary(t *testing.T) {
	var issued atomic.Int64
	h := &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 200 * time.Millisecond}
	h.TokenValid = func(tok string) bool {
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			return false
		}
		b, err := base64.RawURLEncoding.DecodeString(parts[1])
		var c struct{ Exp int64 }
		return err == nil && json.Unmarshal(b, &c) == nil && time.Now().Unix() < c.Exp
	}
	svc := httptest.NewServer(h)
	defer svc.Close()
	defer h.Close()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/app/negotiate" {
			http.NotFound(w, r)
			return
		}
		issued.Add(1)
		enc := base64.RawURLEncoding.EncodeToString
		claims, _ := json.Marshal(map[string]any{"exp": time.Now().Add(2 * time.Second).Unix()})
		tok := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc(claims) + ".c2ln"
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"url": svc.URL + "/client/?hub=kitchen", "accessToken": tok})
	}))
	defer app.Close()
	dir := t.TempDir()
	plan := filepath.Join(dir, "azure.yaml")
	os.WriteFile(plan, []byte(`
target: `+app.URL+`
scenarios:
  display:
    users: 2
    signalr:
      url: /app
      transport: long_polling
      invoke: [{method: Add, args: [40, 2], timeout: 5s}]
load: {stages: [{duration: 5s, users: 1}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "display")
	if cs.Opened != 2 || cs.Failed != 0 || len(cs.Disconnects) != 0 {
		t.Errorf("connections %+v", cs)
	}
	if cs.TokenRenewals < 2*2 || issued.Load() != 2+cs.TokenRenewals {
		t.Errorf("renewals %d, app negotiations %d", cs.TokenRenewals, issued.Load())
	}
	if poll := step(t, r, "display", "poll"); poll.Failed != 0 || poll.Successful == 0 {
		t.Errorf("polls %+v", poll)
	}
	if !strings.Contains(o.Stdout, fmt.Sprintf("%d access tokens renewed", cs.TokenRenewals)) {
		t.Errorf("summary:\n%s", o.Stdout)
	}
}
