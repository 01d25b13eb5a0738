package testserver

import (
	"net/http"

	"github.com/coder/websocket"
)

// WebSocketEcho is an http.HandlerFunc that upgrades a request to a
// WebSocket and answers each message with itself, holding the connection
// until the client goes.
func WebSocketEcho(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer func() { _ = c.CloseNow() }()
	for {
		typ, b, err := c.Read(r.Context())
		if err != nil {
			return
		}
		if err := c.Write(r.Context(), typ, b); err != nil {
			return
		}
	}
}
