package signalr

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/readiness"
)

// ourGoroutines counts the goroutines with a frame of this module's
// protocol code: the hub's own goroutines (it runs in this process) are
// not counted.
func ourGoroutines() int {
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "stampede/internal/proto/") && !strings.Contains(g, "testing.tRunner") {
			n++
		}
	}
	return n
}

// TestIdleHubConnsHoldNoGoroutine: idle hub connections over WebSockets,
// each joined to a group, hold no goroutine of ours (with a reading
// goroutine per connection, 100 connections held 100), and a push to the
// group afterwards reaches every one of them exactly once.
func TestIdleHubConnsHoldNoGoroutine(t *testing.T) {
	if !readiness.Supported() {
		t.Skip("connections read on a goroutine here")
	}
	for _, proto := range []string{"json", "messagepack"} {
		t.Run(proto, func(t *testing.T) {
			const n = 100
			o := testOptions()
			o.Protocol = ProtocolNamed(proto)
			noLeak(t, o)
			ts := hubServer(t, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			hub := ts.URL + "/hubs/kitchen"
			var got atomic.Int64
			conns := make([]*Conn, n)
			base := ourGoroutines()
			for i := range conns {
				c, err := Connect(ctx, hub, nil, o)
				if err != nil {
					t.Fatal(err)
				}
				c.On("OrderPlaced", func(json.RawMessage) { got.Add(1) })
				if _, err := c.Invoke(ctx, "JoinRestaurant", "1"); err != nil {
					t.Fatal(err)
				}
				conns[i] = c
			}
			if added := ourGoroutines() - base; added > n/20 {
				t.Errorf("%d idle hub connections hold %d goroutines of ours, want about none", n, added)
			}
			waiter, err := Connect(ctx, hub, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				if _, err := waiter.Invoke(ctx, "PlaceOrder", "1", k); err != nil {
					t.Fatal(err)
				}
			}
			// A safety net only: the count is what is checked.
			deadline := time.Now().Add(60 * time.Second)
			for got.Load() < 3*n && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			if g := got.Load(); g != 3*n {
				t.Errorf("pushes handled: %d, want %d", g, 3*n)
			}
			if p := o.Stats.Pushes("OrderPlaced"); p != 3*n {
				t.Errorf("pushes counted: %d, want %d", p, 3*n)
			}
			for _, c := range append(conns, waiter) {
				c.Abort()
			}
		})
	}
}
