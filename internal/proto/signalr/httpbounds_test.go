package signalr

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// wrapHub serves h behind hang: requests hang picks are held, with no
// answer at all, until the client gives up or the test ends.
func wrapHub(t *testing.T, h *sigtest.Hub, hang func(r *http.Request, body []byte) bool) (string, *atomic.Int64) {
	t.Helper()
	var held atomic.Int64
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if hang(r, body) {
			held.Add(1)
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(release)
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/hub", &held
}

// TestSSEOpenBoundedFallsBack: a hub that takes the event-stream GET and
// never sends its headers. The open is bounded by UpgradeTimeout, counted
// as a timeout, and auto goes on to long polling, as it would for a
// WebSocket upgrade that never completes.
func TestSSEOpenBoundedFallsBack(t *testing.T) {
	noLeak(t, nil)
	hub, held := wrapHub(t, &sigtest.Hub{Transports: []string{"ServerSentEvents", "LongPolling"}, PollHold: 200 * time.Millisecond},
		func(r *http.Request, _ []byte) bool {
			return r.Method == http.MethodGet && r.Header.Get("Accept") == "text/event-stream"
		})
	o := testOptions()
	o.Transport = Auto
	// Short, so the test does not wait the default; the run's context
	// below is far longer, so only this bound can end the open.
	o.UpgradeTimeout = 200 * time.Millisecond
	r := &rec{}
	o.Recorder = r
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatalf("auto did not fall back: %v", err)
	}
	defer o.HTTPClient.CloseIdleConnections()
	defer c.Close()
	if c.Transport() != LongPolling || o.Stats.Fallbacks.Load() != 1 || held.Load() != 1 {
		t.Errorf("transport %s, fallbacks %d, event streams held %d; want long_polling, 1, 1", c.Transport(), o.Stats.Fallbacks.Load(), held.Load())
	}
	if got := r.classes(OpSSEOpen.String()); len(got) != 1 || got[0] != sample.Timeout {
		t.Errorf("sse open recorded %v, want one timeout", got)
	}
	if res, err := c.Invoke(ctx, "Add", 1, 2); err != nil || string(res) != "3" {
		t.Errorf("add over the fallback: %s %v", res, err)
	}

	// Told to use SSE only, the same hub is a timed-out open.
	o2 := testOptions()
	o2.Transport = ServerSentEvents
	o2.UpgradeTimeout = 200 * time.Millisecond
	_, err = Connect(ctx, hub, nil, o2)
	if e, ok := err.(*Error); !ok || e.Phase != OpSSEOpen.String() || e.Class != sample.Timeout {
		t.Errorf("sse only: %#v", err)
	}
	o2.HTTPClient.CloseIdleConnections()
}

// TestLongPollingCloseSendBounded: a hub that never answers the POST
// carrying our Close message. Closing bounds that send as it bounds the
// DELETE, instead of waiting the send timeout (made an hour here, so
// only the closing bound can end it); the end is the close we asked for.
func TestLongPollingCloseSendBounded(t *testing.T) {
	noLeak(t, nil)
	saved := sendTimeout
	sendTimeout = time.Hour
	t.Cleanup(func() { sendTimeout = saved })
	hub, held := wrapHub(t, &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 200 * time.Millisecond},
		func(r *http.Request, body []byte) bool {
			return r.Method == http.MethodPost && bytes.Equal(body, closeRecord)
		})
	o := testOptions()
	o.Transport = LongPolling
	o.KeepAlive = -1
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer o.HTTPClient.CloseIdleConnections()
	if res, err := c.Invoke(ctx, "Add", 1, 2); err != nil || string(res) != "3" {
		t.Fatalf("add: %s %v", res, err)
	}
	out := o.Stats.Counters.MsgsOut.Load()
	closed := make(chan error, 1)
	go func() { closed <- c.CloseAtEnd() }()
	select {
	case err = <-closed:
	case <-time.After(45 * time.Second):
		t.Fatal("Close waited on the unanswered Close message far past the closing bound")
	}
	if err != nil {
		t.Errorf("close: %v", err)
	}
	if held.Load() != 1 {
		t.Errorf("%d Close messages held by the hub, want 1", held.Load())
	}
	if d := c.Disconnect(); d == nil || d.Reason != ws.ClientClose || d.Class != sample.OK {
		t.Errorf("end %+v, want the client close we asked for", d)
	}
	// The Close message was never acknowledged: not counted as sent; the
	// connection counts as closed at the end, not as a write failure.
	if n := o.Stats.Counters.MsgsOut.Load(); n != out {
		t.Errorf("messages out %d after close, %d before: the unanswered Close counted as sent", n, out)
	}
	if o.Stats.ClosedAtEnd.Load() != 1 || o.Stats.Disconnects[ws.WriteFailed].Load() != 0 {
		t.Errorf("closed at end %d, write failures %d; want 1, 0", o.Stats.ClosedAtEnd.Load(), o.Stats.Disconnects[ws.WriteFailed].Load())
	}
}
