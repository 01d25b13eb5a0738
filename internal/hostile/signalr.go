package hostile

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
)

// HubMode is how a hostile SignalR hub misbehaves.
type HubMode int

const (
	// HubDropAfterHandshake answers the handshake, then cuts the TCP
	// connection at once: no Close message, no close frame.
	HubDropAfterHandshake HubMode = iota
	// HubDropOnInvoke answers the handshake, then cuts the connection
	// when the first invocation arrives, without its Completion.
	HubDropOnInvoke
	// HubNegotiateHangs never answers negotiate.
	HubNegotiateHangs
	// HubHandshakeHangs accepts the WebSocket, reads the handshake and
	// never answers it.
	HubHandshakeHangs
	// HubPushFlood answers the handshake, then pushes invocations of
	// target "Tick" as fast as the client takes them until it goes.
	HubPushFlood
	// HubSilent answers the handshake, then reads everything and answers
	// nothing: invocations never complete, no pings.
	HubSilent
)

// Hub is a SignalR hub (JSON protocol, WebSockets only) at URL, written
// for these tests on coder/websocket, an implementation independent of the
// client's. Counters say what it did.
type Hub struct {
	URL string // http://127.0.0.1:port/hub

	Negotiates atomic.Int64 // negotiate requests answered
	Sockets    atomic.Int64 // WebSockets accepted
	Handshakes atomic.Int64 // handshakes answered
	Pushes     atomic.Int64 // pushes written in full
}

const negotiateAnswer = `{"negotiateVersion":1,"connectionId":"cid","connectionToken":"tok","availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]}]}`

// SignalRHub starts a hub misbehaving as mode says; it is closed when t
// ends.
func SignalRHub(t testing.TB, mode HubMode) *Hub {
	t.Helper()
	h := &Hub{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hub/negotiate", func(w http.ResponseWriter, r *http.Request) {
		if mode == HubNegotiateHangs {
			<-r.Context().Done()
			return
		}
		h.Negotiates.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(negotiateAnswer))
	})
	mux.HandleFunc("GET /hub", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		h.Sockets.Add(1)
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		if mode == HubHandshakeHangs {
			drainWS(ctx, c)
			return
		}
		if c.Write(ctx, websocket.MessageText, []byte("{}\x1e")) != nil {
			return
		}
		h.Handshakes.Add(1)
		switch mode {
		case HubDropAfterHandshake:
			return // CloseNow: the socket goes with no goodbye
		case HubDropOnInvoke:
			for {
				_, b, err := c.Read(ctx)
				if err != nil || bytes.Contains(b, []byte(`"invocationId"`)) {
					return
				}
			}
		case HubSilent:
			drainWS(ctx, c)
		case HubPushFlood:
			// The client's pings are read (and dropped) so its writes
			// never block; the flood is bounded by how fast it reads.
			go drainWS(ctx, c)
			var msg []byte
			for i := 0; ; i++ {
				msg = append(msg[:0], `{"type":1,"target":"Tick","arguments":[`...)
				msg = strconv.AppendInt(msg, int64(i), 10)
				msg = append(msg, "]}\x1e"...)
				if c.Write(ctx, websocket.MessageText, msg) != nil {
					return
				}
				h.Pushes.Add(1)
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	h.URL = srv.URL + "/hub"
	return h
}

// drainWS reads until the client goes, so the socket stays up.
func drainWS(ctx context.Context, c *websocket.Conn) {
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
	}
}
