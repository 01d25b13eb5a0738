package sigtest

import (
	"context"
	"net/http"

	"github.com/coder/websocket"
)

// Stateful reconnect as HubProtocol.md and TransportProtocols.md describe
// it for ASP.NET Core 8: messages of types 1 to 5 are numbered from 1 on
// each side and kept until the peer's Ack (the id of the last one it
// received) releases them; a client whose socket was cut opens a new one
// with the same id and no handshake, and each side sends Sequence (the id
// of the first message it sends again) and resends what it kept. The
// receiver skips ids it already had; a Sequence past the next id it
// expects means messages were lost, and the connection ends.

func sequenced(typ int) bool { return typ >= 1 && typ <= 5 }

// websocket serves a connection's socket: the first one (a handshake
// follows), or a stateful reconnect replacing a cut one.
func (h *Hub) websocket(w http.ResponseWriter, r *http.Request, c *conn) {
	c.mu.Lock()
	resume := c.proto != ""
	if resume && !c.stateful {
		c.mu.Unlock()
		http.Error(w, "connection already has a transport", http.StatusConflict)
		return
	}
	c.gen++
	gen := c.gen
	old := c.sock
	if resume {
		first := c.seqSent + 1
		if len(c.seqBuf) > 0 {
			first = c.seqBuf[0].id
		}
		if h.BadSequence {
			first = c.seqSent + 5
		}
		out := encode(c.proto, map[string]any{"type": 9, "sequenceId": first})
		for _, it := range c.seqBuf {
			out = append(out, it.b...)
		}
		c.out, c.in, c.waitSeq = out, nil, true
	}
	c.mu.Unlock()
	if old != nil {
		old.Close()
	}
	sock, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	if resume {
		h.Reconnects.Add(1)
	}
	sock.SetReadLimit(1 << 20)
	c.mu.Lock()
	if c.gen == gen {
		c.sock = closer{sock}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go c.writeLoop(ctx, sock, gen)
	for {
		_, b, err := sock.Read(ctx)
		if err != nil {
			break
		}
		if c.current(gen) {
			if err := c.receive(b); err != nil {
				sock.Close(websocket.StatusPolicyViolation, "bad message")
				c.close()
				return
			}
		}
	}
	_ = sock.CloseNow()
	c.mu.Lock()
	cur, stateful := c.gen == gen, c.stateful
	c.mu.Unlock()
	if cur && !stateful {
		c.close()
	}
	// A stateful connection stays for the client to come back.
}

type closer struct{ c *websocket.Conn }

func (x closer) Close() error { return x.c.CloseNow() }

func (c *conn) current(gen int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen == gen
}

func (c *conn) writeLoop(ctx context.Context, sock *websocket.Conn, gen int) {
	for {
		c.mu.Lock()
		if c.gen != gen {
			c.mu.Unlock()
			// Pass on a wake-up this socket may have taken from the next.
			select {
			case c.notify <- struct{}{}:
			default:
			}
			return
		}
		b, proto := c.out, c.proto
		c.out = nil
		c.mu.Unlock()
		if len(b) > 0 {
			typ := websocket.MessageText
			if proto == "messagepack" {
				typ = websocket.MessageBinary
			}
			if sock.Write(ctx, typ, b) != nil {
				return
			}
			continue
		}
		select {
		case <-c.notify:
		case <-c.done:
			sock.Close(websocket.StatusNormalClosure, "")
			return
		case <-ctx.Done():
			return
		}
	}
}

// sequence applies stateful reconnect to a received message: false when
// it is not to be dispatched.
func (c *conn) sequence(m message) bool {
	c.mu.Lock()
	if c.waitSeq && m.Type != 9 {
		c.mu.Unlock()
		return false
	}
	switch {
	case m.Type == 9:
		c.waitSeq = false
		bad := m.SequenceID < 1 || m.SequenceID > c.recvNext
		if !bad {
			c.recvNext = m.SequenceID
		}
		c.mu.Unlock()
		if bad {
			c.close()
		}
		return false
	case m.Type == 8:
		bad := m.SequenceID > c.seqSent
		i := 0
		for i < len(c.seqBuf) && c.seqBuf[i].id <= m.SequenceID {
			i++
		}
		c.seqBuf = c.seqBuf[i:]
		c.mu.Unlock()
		if bad {
			c.close()
		}
		return false
	case !sequenced(m.Type):
		c.mu.Unlock()
		return true
	}
	id := c.recvNext
	c.recvNext++
	if id <= c.recvLast {
		c.mu.Unlock()
		c.h.Duplicates.Add(1)
		return false
	}
	c.recvLast = id
	c.mu.Unlock()
	// Acked at once, ahead of any answer: a client that has the answer
	// has the Ack, so what it keeps is exactly what is in flight.
	ack := id
	if c.h.OverAck {
		ack += 10
	}
	c.send(map[string]any{"type": 8, "sequenceId": ack})
	return true
}

// Unacked is how many sequenced messages the hub keeps for its
// connections, not yet acknowledged.
func (h *Hub) Unacked() int {
	h.mu.Lock()
	var cs []*conn
	for _, c := range h.conns {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	n := 0
	for _, c := range cs {
		c.mu.Lock()
		n += len(c.seqBuf)
		c.mu.Unlock()
	}
	return n
}

// Joined is how many connections are in at least one group.
func (h *Hub) Joined() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	in := map[*conn]bool{}
	for _, g := range h.groups {
		for c := range g {
			in[c] = true
		}
	}
	return len(in)
}
