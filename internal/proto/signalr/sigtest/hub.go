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
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"
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

	Polls  atomic.Int64 // long polls answered or cut
	Pushes atomic.Int64 // OrderPlaced messages queued to connections
	Posts  atomic.Int64

	mu     sync.Mutex
	conns  map[string]*conn
	groups map[string]map[*conn]bool
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
	started bool // the first poll was answered

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
	json.NewEncoder(w).Encode(ans)
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

func (h *Hub) poll(w http.ResponseWriter, r *http.Request, c *conn) {
	defer h.Polls.Add(1)
	c.mu.Lock()
	first := !c.started
	c.started = true
	c.mu.Unlock()
	if first {
		// The first poll completes the connection and returns at once.
		w.WriteHeader(http.StatusOK)
		return
	}
	hold := h.PollHold
	if hold <= 0 {
		hold = 90 * time.Second
	}
	var timeout <-chan time.Time
	if !h.NeverAnswerPolls {
		t := time.NewTimer(hold)
		defer t.Stop()
		timeout = t.C
	}
	for {
		if b := c.take(); len(b) > 0 {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.WriteHeader(http.StatusOK)
			w.Write(b)
			return
		}
		select {
		case <-c.notify:
			if h.NeverAnswerPolls {
				continue
			}
		case <-timeout:
			w.WriteHeader(http.StatusOK)
			return
		case <-c.done:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (h *Hub) sse(w http.ResponseWriter, r *http.Request, c *conn) {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	if h.EndlessSSELine {
		chunk := bytes.Repeat([]byte("x"), 16<<10)
		w.Write([]byte("data: "))
		for i := 0; i < 1024; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			fl.Flush()
		}
		<-r.Context().Done()
		return
	}
	for {
		if b := c.take(); len(b) > 0 {
			// One event per frame; a frame's lines each become a data
			// line (the client joins them with LF again).
			var ev bytes.Buffer
			for _, line := range strings.Split(string(b), "\n") {
				ev.WriteString("data: " + line + "\r\n")
			}
			ev.WriteString("\r\n")
			if _, err := w.Write(ev.Bytes()); err != nil {
				return
			}
			fl.Flush()
		}
		select {
		case <-c.notify:
		case <-c.done:
			return
		case <-r.Context().Done():
			c.close()
			return
		}
	}
}

// receive handles a POST body: the handshake, then hub messages.
func (c *conn) receive(b []byte) error {
	c.mu.Lock()
	c.in = append(c.in, b...)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		proto, in := c.proto, c.in
		c.mu.Unlock()
		if len(in) == 0 {
			return nil
		}
		var msg []byte
		n := 0
		switch proto {
		case "":
			i := bytes.IndexByte(in, 0x1e)
			if i < 0 {
				return nil
			}
			var hs struct {
				Protocol string `json:"protocol"`
				Version  int    `json:"version"`
			}
			if err := json.Unmarshal(in[:i], &hs); err != nil || (hs.Protocol != "json" && hs.Protocol != "messagepack") {
				c.queue([]byte(`{"error":"bad handshake"}` + "\x1e"))
				return fmt.Errorf("bad handshake %q", in[:i])
			}
			c.mu.Lock()
			c.proto, c.in = hs.Protocol, in[i+1:]
			c.mu.Unlock()
			c.queue([]byte("{}\x1e"))
			continue
		case "json":
			i := bytes.IndexByte(in, 0x1e)
			if i < 0 {
				return nil
			}
			msg, n = in[:i], i+1
		default:
			l, k := binary.Uvarint(in)
			if k <= 0 || uint64(len(in)-k) < l {
				return nil
			}
			msg, n = in[k:k+int(l)], k+int(l)
		}
		c.mu.Lock()
		c.in = in[n:]
		c.mu.Unlock()
		m, err := decode(proto, msg)
		if err != nil {
			return err
		}
		c.dispatch(m)
	}
}

// message is a hub message as this server needs it.
type message struct {
	Type         int
	InvocationID string
	Target       string
	Arguments    []any
	SequenceID   int64
}

func decode(proto string, b []byte) (message, error) {
	var m message
	if proto == "json" {
		var j struct {
			Type         int    `json:"type"`
			InvocationID string `json:"invocationId"`
			Target       string `json:"target"`
			Arguments    []any  `json:"arguments"`
			SequenceID   int64  `json:"sequenceId"`
		}
		if err := json.Unmarshal(b, &j); err != nil {
			return m, err
		}
		return message{j.Type, j.InvocationID, j.Target, j.Arguments, j.SequenceID}, nil
	}
	var a []any
	if err := msgpack.Unmarshal(b, &a); err != nil || len(a) == 0 {
		return m, fmt.Errorf("bad MessagePack message %x", b)
	}
	m.Type = toInt(a[0])
	if (m.Type == 1 || m.Type == 4) && len(a) >= 5 {
		m.InvocationID, _ = a[2].(string)
		m.Target, _ = a[3].(string)
		m.Arguments, _ = a[4].([]any)
	}
	if (m.Type == 8 || m.Type == 9) && len(a) >= 2 {
		m.SequenceID = int64(toInt(a[1]))
	}
	return m, nil
}

func toInt(v any) int {
	switch n := v.(type) {
	case int8:
		return int(n)
	case int16:
		return int(n)
	case int32:
		return int(n)
	case int64:
		return int(n)
	case uint8:
		return int(n)
	case uint16:
		return int(n)
	case uint32:
		return int(n)
	case uint64:
		return int(n)
	case float64:
		return int(n)
	case string:
		var i int
		fmt.Sscan(n, &i)
		return i
	}
	return 0
}

func (c *conn) dispatch(m message) {
	if c.stateful && !c.sequence(m) {
		return
	}
	switch m.Type {
	case 1:
		result, err := c.invoke(m.Target, m.Arguments)
		if m.InvocationID != "" {
			if err != "" {
				c.send(map[string]any{"type": 3, "invocationId": m.InvocationID, "error": err})
			} else {
				c.send(map[string]any{"type": 3, "invocationId": m.InvocationID, "result": result})
			}
		}
	case 7:
		c.close()
	}
}

func (c *conn) invoke(target string, args []any) (any, string) {
	h := c.h
	switch strings.ToLower(target) {
	case "add":
		if len(args) != 2 {
			return nil, "add takes two numbers"
		}
		return toInt(args[0]) + toInt(args[1]), ""
	case "joinrestaurant":
		if len(args) != 1 {
			return nil, "JoinRestaurant takes an id"
		}
		id := fmt.Sprint(args[0])
		h.mu.Lock()
		if h.groups[id] == nil {
			h.groups[id] = map[*conn]bool{}
		}
		h.groups[id][c] = true
		h.mu.Unlock()
		return "joined " + id, ""
	case "placeorder":
		if len(args) != 2 {
			return nil, "PlaceOrder takes a restaurant and an order"
		}
		h.PlaceOrder(fmt.Sprint(args[0]), toInt(args[1]))
		return nil, ""
	case "bye":
		c.send(map[string]any{"type": 7, "error": "restaurant closed", "allowReconnect": true})
		go func() {
			time.Sleep(50 * time.Millisecond)
			c.close()
		}()
		return nil, ""
	}
	return nil, "Unknown hub method '" + target + "'"
}

// PlaceOrder pushes OrderPlaced [{order, sentAt}] to the restaurant's
// group.
func (h *Hub) PlaceOrder(restaurant string, order int) {
	h.mu.Lock()
	var cs []*conn
	for c := range h.groups[restaurant] {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	for _, c := range cs {
		h.Pushes.Add(1)
		c.send(map[string]any{"type": 1, "target": "OrderPlaced",
			"arguments": []any{map[string]any{"order": order, "sentAt": time.Now().UnixMilli()}}})
	}
}

// send encodes a message in the connection's protocol and queues it; a
// sequenced one is kept until acknowledged.
func (c *conn) send(m map[string]any) {
	c.mu.Lock()
	b := encode(c.proto, m)
	if c.stateful && sequenced(m["type"].(int)) {
		c.seqSent++
		c.seqBuf = append(c.seqBuf, seqItem{c.seqSent, b})
	}
	c.out = append(c.out, b...)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func encode(proto string, m map[string]any) []byte {
	if proto == "json" {
		b, _ := json.Marshal(m)
		return append(b, 0x1e)
	}
	typ := m["type"].(int)
	var a []any
	switch typ {
	case 1:
		a = []any{1, map[string]any{}, nil, m["target"], m["arguments"]}
	case 3:
		if e, ok := m["error"]; ok {
			a = []any{3, map[string]any{}, m["invocationId"], 1, e}
		} else if m["result"] == nil {
			a = []any{3, map[string]any{}, m["invocationId"], 2}
		} else {
			a = []any{3, map[string]any{}, m["invocationId"], 3, m["result"]}
		}
	case 6:
		a = []any{6}
	case 7:
		a = []any{7, m["error"], m["allowReconnect"]}
	case 8, 9:
		a = []any{typ, m["sequenceId"]}
	}
	body, _ := msgpack.Marshal(a)
	b := binary.AppendUvarint(nil, uint64(len(body)))
	return append(b, body...)
}
