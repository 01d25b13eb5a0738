package conn

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
