package signalr

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/proto/ws"
)

// waitLong polls cond; the deadline is only a safety net for a loaded
// machine.
func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func statefulHub(t *testing.T, h *sigtest.Hub) *sigtest.CutProxy {
	h.Transports = []string{"WebSockets"}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return sigtest.NewCutProxy(t, ts.Listener.Addr().String())
}

func statefulOptions(proto Protocol) *Options {
	o := testOptions()
	o.Protocol = proto
	o.StatefulReconnect = true
	// No Acks from us: the server keeps all it sent, so what it resends
	// and we skip is exact.
	o.AckInterval = -1
	o.InvokeTimeout = 20 * time.Second
	return o
}

// TestStatefulReconnect cuts the TCP connection under a running hub with
// traffic in flight both ways: K pushes arrived before the cut, M pushes
// and N of our sends were swallowed with it. After the reconnect (same
// token, Sequence, resends) every one of them arrives exactly once: N
// sends recovered, 1+K server messages received twice and skipped, none
// lost, and the connection goes on.
func TestStatefulReconnect(t *testing.T) {
	noLeak(t, nil)
	const K, M, N = 3, 2, 4
	for _, proto := range []Protocol{JSON, MessagePack} {
		h := &sigtest.Hub{StatefulReconnect: true}
		p := statefulHub(t, h)
		o := statefulOptions(proto)
		ctx := ctx5(t)
		c, err := Connect(ctx, "http://"+p.Addr()+"/hubs/kitchen", nil, o)
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		if c.sf == nil {
			t.Fatalf("%s: stateful reconnect not granted", proto)
		}
		sockets := p.Accepted.Load() // negotiate's and the WebSocket
		if res, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err != nil || string(res) != `"joined 7"` {
			t.Fatalf("%s: join: %s %v", proto, res, err)
		}
		for i := 0; i < K; i++ {
			h.PlaceOrder("7", i)
		}
		waitLong(t, "K pushes", func() bool { return o.Stats.Pushes("OrderPlaced") == K })

		p.Swallow()
		for i := 0; i < N; i++ {
			if err := c.Send("PlaceOrder", "7", 100+i); err != nil {
				t.Fatalf("%s: send: %v", proto, err)
			}
		}
		for i := 0; i < M; i++ {
			h.PlaceOrder("7", 200+i)
		}
		p.Cut()

		waitLong(t, "all pushes", func() bool { return o.Stats.Pushes("OrderPlaced") == K+M+N })
		if res, err := c.Invoke(ctx, "Add", 20, 22); err != nil || string(res) != "42" {
			t.Fatalf("%s: add after reconnect: %s %v", proto, res, err)
		}
		st := o.Stats
		if st.Reconnects.Load() != 1 || h.Reconnects.Load() != 1 || p.Accepted.Load() != sockets+1 {
			t.Errorf("%s: reconnects %d, hub %d, sockets %d", proto, st.Reconnects.Load(), h.Reconnects.Load(), p.Accepted.Load()-sockets)
		}
		if st.Recovered.Load() != N || st.Duplicates.Load() != 1+K || st.Lost.Load() != 0 || st.ReconnectFailures.Load() != 0 {
			t.Errorf("%s: recovered %d duplicates %d lost %d failures %d", proto,
				st.Recovered.Load(), st.Duplicates.Load(), st.Lost.Load(), st.ReconnectFailures.Load())
		}
		if h.Duplicates.Load() != 0 {
			t.Errorf("%s: hub skipped %d", proto, h.Duplicates.Load())
		}
		if st.Pushes("OrderPlaced") != K+M+N {
			t.Errorf("%s: pushes %d", proto, st.Pushes("OrderPlaced"))
		}
		c.Close()
		if d := c.Disconnect(); d.Reason != ws.ClientClose || st.Open.Load() != 0 || st.Opened.Load() != 1 || st.ClosedAtEnd.Load() != 0 {
			t.Errorf("%s: end %+v open %d opened %d", proto, d, st.Open.Load(), st.Opened.Load())
		}
		for r := range st.Disconnects {
			if n := st.Disconnects[r].Load(); n != 0 && ws.Reason(r) != ws.ClientClose {
				t.Errorf("%s: %d disconnects %s", proto, n, ws.Reason(r))
			}
		}
	}
}

// TestStatefulReconnectFails: when the hub cannot be reached again within
// the window, our sends swallowed by the cut are counted lost and the
// connection ends as the cut did.
func TestStatefulReconnectFails(t *testing.T) {
	noLeak(t, nil)
	h := &sigtest.Hub{StatefulReconnect: true}
	p := statefulHub(t, h)
	o := statefulOptions(JSON)
	o.ReconnectWindow = 300 * time.Millisecond
	ctx := ctx5(t)
	c, err := Connect(ctx, "http://"+p.Addr()+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err != nil {
		t.Fatal(err)
	}
	p.Swallow()
	for i := 0; i < 3; i++ {
		c.Send("PlaceOrder", "7", i)
	}
	p.StopAccepting()
	p.Cut()
	waitLong(t, "the end", func() bool { return c.Disconnect() != nil })
	<-c.Done()
	st := o.Stats
	d := c.Disconnect()
	if d.Reason == ws.ClientClose || !strings.Contains(d.Text, "stateful reconnect failed") {
		t.Errorf("end %+v", d)
	}
	if st.Lost.Load() != 3 || st.ReconnectFailures.Load() != 1 || st.Reconnects.Load() != 0 || st.Recovered.Load() != 0 {
		t.Errorf("lost %d failures %d reconnects %d recovered %d", st.Lost.Load(), st.ReconnectFailures.Load(), st.Reconnects.Load(), st.Recovered.Load())
	}
	if st.Open.Load() != 0 || st.Disconnects[d.Reason].Load() != 1 {
		t.Errorf("open %d, %s %d", st.Open.Load(), d.Reason, st.Disconnects[d.Reason].Load())
	}
}

// TestStatefulHostile: a server resuming past what it sent (messages
// lost: the gap is counted and the connection ends), one acknowledging
// messages we never sent, and one that does not grant stateful reconnect
// (a cut is then an ordinary disconnect).
func TestStatefulHostile(t *testing.T) {
	noLeak(t, nil)
	for _, proto := range []Protocol{JSON, MessagePack} {
		h := &sigtest.Hub{StatefulReconnect: true, BadSequence: true}
		p := statefulHub(t, h)
		o := statefulOptions(proto)
		ctx := ctx5(t)
		hub := "http://" + p.Addr() + "/hubs/kitchen"
		c, err := Connect(ctx, hub, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err != nil {
			t.Fatal(err)
		}
		p.Cut()
		waitLong(t, "the end", func() bool { return c.Disconnect() != nil })
		// The hub sent one message (the Completion) and resumes at 6:
		// 2 to 5 were lost.
		d := c.Disconnect()
		if d.Reason != ws.ProtocolError || !strings.Contains(d.Text, "Sequence 6, but 1 messages were received") {
			t.Errorf("%s: bad sequence %+v", proto, d)
		}
		if o.Stats.Lost.Load() != 4 || o.Stats.Disconnects[ws.ProtocolError].Load() != 1 || h.Reconnects.Load() != 1 {
			t.Errorf("%s: lost %d, hub reconnects %d", proto, o.Stats.Lost.Load(), h.Reconnects.Load())
		}

		h2 := &sigtest.Hub{StatefulReconnect: true, OverAck: true}
		p2 := statefulHub(t, h2)
		o2 := statefulOptions(proto)
		c, err = Connect(ctx, "http://"+p2.Addr()+"/hubs/kitchen", nil, o2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err == nil {
			t.Errorf("%s: over-ack: invoke succeeded", proto)
		}
		<-c.Done()
		if d := c.Disconnect(); d.Reason != ws.ProtocolError || !strings.Contains(d.Text, "Ack for message 11, but 1 were sent") {
			t.Errorf("%s: over-ack %+v", proto, d)
		}

		h3 := &sigtest.Hub{}
		p3 := statefulHub(t, h3)
		o3 := statefulOptions(proto)
		c, err = Connect(ctx, "http://"+p3.Addr()+"/hubs/kitchen", nil, o3)
		if err != nil {
			t.Fatal(err)
		}
		if c.sf != nil {
			t.Errorf("%s: stateful without the server granting it", proto)
		}
		sockets := p3.Accepted.Load()
		p3.Cut()
		<-c.Done()
		if d := c.Disconnect(); d.Reason != ws.NetworkReset || o3.Stats.Reconnects.Load() != 0 || p3.Accepted.Load() != sockets {
			t.Errorf("%s: ungranted cut %+v, %d more sockets", proto, d, p3.Accepted.Load()-sockets)
		}
	}
}

// TestCloseDuringReconnect: the hub's link is cut and the address it is
// dialled again at accepts and never answers. CloseAtEnd during that dial
// ends the connection at once, as closed at the end, instead of waiting
// for the dial's timeout or the reconnect window (both an hour here, so
// a Close that waits for either trips the safety net).
func TestCloseDuringReconnect(t *testing.T) {
	noLeak(t, nil)
	h := &sigtest.Hub{StatefulReconnect: true}
	p := statefulHub(t, h)
	o := statefulOptions(JSON)
	o.ReconnectWindow = time.Hour
	o.UpgradeTimeout = time.Hour
	ctx := ctx5(t)
	c, err := Connect(ctx, "http://"+p.Addr()+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err != nil {
		t.Fatal(err)
	}
	p.Hang()
	p.Cut()
	waitLong(t, "the reconnect's dial", func() bool { return p.Hung.Load() >= 1 })
	closed := make(chan struct{})
	go func() {
		c.CloseAtEnd()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("CloseAtEnd still waiting for the reconnect")
	}
	st := o.Stats
	if d := c.Disconnect(); d == nil || d.Reason != ws.ClientClose {
		t.Errorf("end %+v", d)
	}
	if st.ClosedAtEnd.Load() != 1 || st.Open.Load() != 0 || st.ReconnectFailures.Load() != 0 || st.Reconnects.Load() != 0 {
		t.Errorf("closed at end %d open %d failures %d reconnects %d",
			st.ClosedAtEnd.Load(), st.Open.Load(), st.ReconnectFailures.Load(), st.Reconnects.Load())
	}
}
