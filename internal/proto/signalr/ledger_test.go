package signalr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// ledger checks that every connection Connect returned is counted opened
// and, once ended, counted once: a disconnect by reason or closed at the
// end.
func ledger(t *testing.T, st *Stats, connected int64) {
	t.Helper()
	var disc int64
	for i := range st.Disconnects {
		disc += st.Disconnects[i].Load()
	}
	if st.Opened.Load() != connected || st.Opened.Load() != st.Open.Load()+st.ClosedAtEnd.Load()+disc {
		t.Errorf("connected %d; stats opened %d, open %d, closed at end %d, disconnects %d", connected, st.Opened.Load(), st.Open.Load(), st.ClosedAtEnd.Load(), disc)
	}
}

// A hub that hangs up right after the handshake: the connection did open
// (Connect returned it) and ended at once. When the socket's end beat
// Connect's bookkeeping, it was counted neither opened nor ended, while
// the run counted it opened: 14 opened, 4 disconnects (issue 12, item 9).
// Many connects make the race come out both ways.
func TestDropRightAfterHandshakeCounted(t *testing.T) {
	o := &Options{Stats: NewStats()}
	noLeak(t, o) // first, so it looks after the hub is gone
	hub := hostile.SignalRHub(t, hostile.HubDropAfterHandshake)
	t.Cleanup(o.CloseIdleConnections)
	var connected, failed int64
	for i := 0; i < 40; i++ {
		c, err := Connect(ctx5(t), hub.URL, nil, o)
		if err != nil {
			// The drop may also beat the handshake answer's read.
			var e *Error
			if !errors.As(err, &e) || e.Phase != "handshake" || e.Class != sample.ConnReset {
				t.Fatalf("connect %d: %v", i, err)
			}
			failed++
			continue
		}
		connected++
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the dropped connection never ended")
		}
		if d := c.Disconnect(); d.Reason != ws.NetworkReset || d.Class != sample.ConnReset {
			t.Errorf("disconnect %v", d)
		}
	}
	if connected == 0 {
		t.Fatal("no connect succeeded")
	}
	ledger(t, o.Stats, connected)
	if n := o.Stats.Disconnects[ws.NetworkReset].Load(); n != connected {
		t.Errorf("network_reset %d, want %d", n, connected)
	}
	t.Logf("%d connected, %d failed at the handshake", connected, failed)
}

// A hub that hangs up when the first invocation arrives: the invoke fails
// as conn_reset, and the connection is one network_reset disconnect.
func TestDropDuringInvokeCounted(t *testing.T) {
	r := &rec{}
	o := &Options{Stats: NewStats(), Recorder: r}
	noLeak(t, o)
	hub := hostile.SignalRHub(t, hostile.HubDropOnInvoke)
	t.Cleanup(o.CloseIdleConnections)
	var connected int64
	for i := 0; i < 5; i++ {
		c, err := Connect(ctx5(t), hub.URL, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		connected++
		_, err = c.Invoke(ctx5(t), "Join", "1")
		var e *Error
		if !errors.As(err, &e) || e.Class != sample.ConnReset {
			t.Errorf("invoke on a dropped connection: %v", err)
		}
		c.Close()
	}
	ledger(t, o.Stats, connected)
	if n := o.Stats.Disconnects[ws.NetworkReset].Load(); n != connected {
		t.Errorf("network_reset %d of %d", n, connected)
	}
	if got := r.classes("invoke Join"); len(got) != 5 || got[0] != sample.ConnReset {
		t.Errorf("invoke recorded %v", got)
	}
}

// Hold's end and CloseAtEnd: a connection open when the caller stops is
// counted closed at the end, not as a disconnect.
func TestCloseAtEndIsNoDisconnect(t *testing.T) {
	ts := hubServer(t, nil)
	o := testOptions()
	noLeak(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Hold(ctx, ts.URL+"/hubs/kitchen", nil, o, nil) }()
	deadline := time.Now().Add(5 * time.Second)
	for o.Stats.Open.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	c.CloseAtEnd()
	ledger(t, o.Stats, 2)
	if o.Stats.ClosedAtEnd.Load() != 2 {
		t.Errorf("closed at end %d, disconnects %v", o.Stats.ClosedAtEnd.Load(), o.Stats.Disconnects[ws.ClientClose].Load())
	}
}
