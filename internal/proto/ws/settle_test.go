package ws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// blockingHandler counts a message only once its connection has ended and
// Close has returned (or, failing that, a moment after the end), so it is
// still inside Message when Close ends the connection.
type blockingHandler struct {
	entered     chan struct{}
	closeReturn chan struct{}
	delivered   atomic.Int64
}

func (h *blockingHandler) Message(c *Conn, _ MessageType, _ []byte) error {
	close(h.entered)
	<-c.Done()
	select {
	case <-h.closeReturn:
	case <-time.After(100 * time.Millisecond):
	}
	h.delivered.Add(1)
	return nil
}

func (h *blockingHandler) Closed(*Conn, *Disconnect) *Disconnect { return nil }

// A Close that gives up on the close handshake while the reader is inside
// a handler (as against a flood, where the close frame waits behind
// queued pushes): once Close returns, the messages counted in MsgsIn and
// the messages the handler received agree. Before the fix Close returned
// as soon as it cut the socket, with MsgsIn 1 and the handler's count 0.
// Abort (the end of a run) holds to the same.
func TestCloseWaitsForMessageInHandler(t *testing.T) {
	t.Run("close", func(t *testing.T) { testSettle(t, func(c *Conn) { c.Close(1000, "") }) })
	t.Run("abort", func(t *testing.T) { testSettle(t, (*Conn).Abort) })
}

func testSettle(t *testing.T, end func(*Conn)) {
	noLeak(t)
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		if c.Write(r.Context(), websocket.MessageText, []byte("push")) != nil {
			return
		}
		// Never read: our close frame goes unanswered, so Close gives up
		// after CloseTimeout.
		select {
		case <-quit:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(quit)

	ct := &Counters{}
	h := &blockingHandler{entered: make(chan struct{}), closeReturn: make(chan struct{})}
	c, err := Dial(context.Background(), srv.URL, nil, &Options{Counters: ct, CloseTimeout: 2 * time.Second}, h)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the handler")
	}
	end(c)
	in, delivered := ct.MsgsIn.Load(), h.delivered.Load()
	close(h.closeReturn)
	if in != 1 || delivered != in {
		t.Errorf("after the end: messages in %d, delivered to the handler %d", in, delivered)
	}
	if d := c.Disconnect(); d == nil || d.Reason != ClientClose {
		t.Errorf("disconnect %v", d)
	}
}
