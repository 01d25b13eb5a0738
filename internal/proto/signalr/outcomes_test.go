package signalr

import (
	"context"
	"testing"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// TestServerCloseOutcomes: each kind of Close the server sends ends the
// connection with its own class and is counted by kind, and none of them
// is a reset.
func TestServerCloseOutcomes(t *testing.T) {
	cases := []struct {
		name, close string
		class       sample.Class
		kinds       map[string]int64
	}{
		{"graceful", `{"type":7}`, sample.ServerClose, map[string]int64{"graceful": 1}},
		{"empty error is graceful", `{"type":7,"error":""}`, sample.ServerClose, map[string]int64{"graceful": 1}},
		{"with error", `{"type":7,"error":"hub crashed"}`, sample.ServerError, map[string]int64{"error": 1}},
		{"allow reconnect", `{"type":7,"allowReconnect":true}`, sample.ServerClose, map[string]int64{"graceful": 1, "allow_reconnect": 1}},
		{"error and allow reconnect", `{"type":7,"error":"deploy","allowReconnect":true}`, sample.ServerError, map[string]int64{"error": 1, "allow_reconnect": 1}},
	}
	for _, tc := range cases {
		o := testOptions()
		msg := tc.close + "\x1e"
		c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
			write(ctx, c, msg)
			drain(ctx, c)
		})
		d := waitDone(t, c)
		if d.Reason != ws.ServerClose || d.Class != tc.class {
			t.Errorf("%s: %+v", tc.name, d)
		}
		got := o.Stats.CloseCounts()
		if len(got) != len(tc.kinds) {
			t.Errorf("%s: closes %v, want %v", tc.name, got, tc.kinds)
		}
		for k, n := range tc.kinds {
			if got[k] != n {
				t.Errorf("%s: closes %v, want %v", tc.name, got, tc.kinds)
			}
		}
		if o.Stats.Disconnects[ws.ServerClose].Load() != 1 {
			t.Errorf("%s: disconnect not counted", tc.name)
		}
	}
}

// TestStreamItemsCountedPerStream: items are counted by streamed method,
// across calls.
func TestStreamItemsCountedPerStream(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	ts := hubServer(t, nil)
	ctx := ctx5(t)
	c, err := Connect(ctx, ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{3, 4} {
		if got, err := c.Stream(ctx, "count", []any{n}, nil); err != nil || got != n {
			t.Fatalf("stream of %d: %d %v", n, got, err)
		}
	}
	if got := o.Stats.StreamItems(); len(got) != 1 || got["count"] != 7 {
		t.Errorf("stream items %v, want count: 7", got)
	}
}
