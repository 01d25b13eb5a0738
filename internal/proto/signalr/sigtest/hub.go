// Package sigtest is a SignalR hub for tests of the transports no
// third-party Go server in this module speaks: long polling (and
// Server-Sent Events offered alone), and stateful reconnect.
// philippseith/signalr serves WebSockets and Server-Sent Events only, and
// no Ack or Sequence, so this server is written from
// the transport and hub protocol specs in the aspnetcore repository
// (src/SignalR/docs/specs/TransportProtocols.md and HubProtocol.md): v1
// negotiate, HTTP POST sends, event streams, long polls (the first
// answered at once, later ones held until there is data, then 200 empty
// at the hold's end, 204 once the connection is gone, DELETE to end), and
// the JSON and MessagePack hub protocols, and over WebSockets stateful
// reconnect (negotiate's useStatefulReconnect, Ack and Sequence, the same
// connection token dialled again; see ws.go). It shares no code with the
// client it tests.
package sigtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Hub serves a kitchen hub at any path (negotiate at PATH/negotiate).
type Hub struct {
	// Transports are offered in negotiate, by their negotiate names
	// (WebSockets is served only for stateful-reconnect tests).
	Transports []string
	// PollHold is how long a poll without data is held (default 90s, as
	// ASP.NET Core).
	PollHold time.Duration
	// KeepAlive is the interval of server Pings (default 15s).
	KeepAlive time.Duration
	// Hostile behaviours.
	NeverAnswerPolls bool // polls after the first are held for ever
	EndlessSSELine   bool // the event stream sends one line that never ends
	// StatefulReconnect grants useStatefulReconnect to clients that ask.
	StatefulReconnect bool
	BadSequence       bool // a reconnect resumes past what was sent
	OverAck           bool // Acks name messages the client never sent

	// TokenValid, when set, checks the access token of every request
	// (bearer header or access_token query), as Azure SignalR Service
	// does; a refused one is answered 401.
	TokenValid   func(token string) bool
	Unauthorized atomic.Int64 // requests answered 401

	Reconnects atomic.Int64 // sockets that resumed a connection
	Duplicates atomic.Int64 // client messages received twice and skipped

	Handshakes atomic.Int64 // handshakes answered: connections opened
	Polls      atomic.Int64 // long polls answered or cut
	Pushes     atomic.Int64 // OrderPlaced messages queued to connections
	Posts      atomic.Int64

	mu       sync.Mutex
	conns    map[string]*conn
	groups   map[string]map[*conn]bool
	detached []*conn
}

type conn struct {
	h       *Hub
	mu      sync.Mutex
	out     []byte
	notify  chan struct{} // one token when out gains data
	in      []byte
	proto   string // "" until the handshake
	closed  bool
	done    chan struct{}
	started bool          // the first poll was answered
	sseOver chan struct{} // an event stream's: closed when its handler returned

	// Stateful reconnect (WebSockets), under mu.
	stateful bool
	gen      int // the socket serving the connection; a new one replaces it
	sock     io.Closer
	seqSent  int64
	seqBuf   []seqItem
	recvNext int64
	recvLast int64
	waitSeq  bool
}

type seqItem struct {
	id int64
	b  []byte
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.TokenValid != nil {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if tok == "" {
			tok = r.URL.Query().Get("access_token")
		}
		if !h.TokenValid(tok) {
			h.Unauthorized.Add(1)
			http.Error(w, "access token expired or invalid", http.StatusUnauthorized)
			return
		}
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/negotiate") {
		h.negotiate(w, r)
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		http.Error(w, "id is required", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	c := h.conns[id]
	h.mu.Unlock()
	if c == nil {
		http.Error(w, "no such connection", http.StatusNotFound)
		return
	}
	switch {
	case r.Method == http.MethodPost:
		h.Posts.Add(1)
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := c.receive(b); err != nil {
			c.close()
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	case r.Method == http.MethodDelete:
		c.close()
		w.WriteHeader(http.StatusAccepted)
	case r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		h.websocket(w, r, c)
	case r.Method == http.MethodGet && r.Header.Get("Accept") == "text/event-stream":
		h.sse(w, r, c)
	case r.Method == http.MethodGet:
		h.poll(w, r, c)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (h *Hub) negotiate(w http.ResponseWriter, r *http.Request) {
	tok := newID()
	c := &conn{h: h, notify: make(chan struct{}, 1), done: make(chan struct{}), recvNext: 1}
	c.stateful = h.StatefulReconnect && r.URL.Query().Get("useStatefulReconnect") == "true"
	h.mu.Lock()
	if h.conns == nil {
		h.conns, h.groups = map[string]*conn{}, map[string]map[*conn]bool{}
	}
	h.conns[tok] = c
	h.mu.Unlock()
	type tr struct {
		Transport       string   `json:"transport"`
		TransferFormats []string `json:"transferFormats"`
	}
	var trs []tr
	for _, t := range h.Transports {
		f := []string{"Text", "Binary"}
		if t == "ServerSentEvents" {
			f = []string{"Text"}
		}
		trs = append(trs, tr{t, f})
	}
	w.Header().Set("Content-Type", "application/json")
	ans := map[string]any{
		"negotiateVersion": 1, "connectionId": newID(), "connectionToken": tok, "availableTransports": trs,
	}
	if c.stateful {
		ans["useStatefulReconnect"] = true
	}
	_ = json.NewEncoder(w).Encode(ans)
	go c.pinger()
}

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (c *conn) pinger() {
	ka := c.h.KeepAlive
	if ka <= 0 {
		ka = 15 * time.Second
	}
	t := time.NewTicker(ka)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.mu.Lock()
			p := c.proto
			c.mu.Unlock()
			if p != "" {
				c.send(map[string]any{"type": 6})
			}
		case <-c.done:
			return
		}
	}
}

// Close ends every connection (their polls get 204, streams end).
func (h *Hub) Close() {
	h.mu.Lock()
	var cs []*conn
	for _, c := range h.conns {
		cs = append(cs, c)
	}
	cs = append(cs, h.detached...)
	h.detached = nil
	h.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// Open is the number of connections negotiated and not yet closed.
func (h *Hub) Open() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// detach takes the connection whose connection token is id out of Open,
// as a service forgets a connection whose token it refused. The client
// learns of it from the refused request's 401: a held long poll is
// answered as usual and the next request is refused, and an event stream
// stays open, as ASP.NET Core leaves it when it refuses a send. With
// endStream, the event stream ends first, and detach returns once its
// handler has: a server that ends the stream before it answers the
// refused request. Close ends what is left.
func (h *Hub) detach(id string, endStream bool) {
	h.mu.Lock()
	c := h.conns[id]
	if c != nil {
		delete(h.conns, id)
		h.detached = append(h.detached, c)
	}
	h.mu.Unlock()
	if c == nil || !endStream {
		return
	}
	c.mu.Lock()
	over := c.sseOver
	c.mu.Unlock()
	if over != nil {
		c.close()
		<-over
		// Time for the stream's end to reach the client before the
		// refusal does: the order the client must not depend on.
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *conn) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	h := c.h
	h.mu.Lock()
	for id, x := range h.conns {
		if x == c {
			delete(h.conns, id)
		}
	}
	for _, g := range h.groups {
		delete(g, c)
	}
	h.mu.Unlock()
}

// queue adds framed bytes for the client.
func (c *conn) queue(b []byte) {
	c.mu.Lock()
	c.out = append(c.out, b...)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// take empties the queue.
func (c *conn) take() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.out
	c.out = nil
	return b
}
