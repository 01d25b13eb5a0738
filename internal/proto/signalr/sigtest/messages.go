package sigtest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

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
			c.h.Handshakes.Add(1)
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
		_, _ = fmt.Sscan(n, &i)
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
