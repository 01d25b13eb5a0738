package signalr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/jsonpath"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// Message implements ws.Handler; it runs on the read goroutine.
func (c *Conn) Message(wc *ws.Conn, _ ws.MessageType, data []byte) error {
	if c.sf != nil {
		if c.sf.stale(wc) {
			return nil
		}
		c.sf.rmu.Lock()
		defer c.sf.rmu.Unlock()
	}
	if len(c.partial) > 0 {
		// A record or frame split across WebSocket messages: the .NET
		// server may split large writes, so join instead of failing.
		if int64(len(c.partial)+len(data)) > c.o.maxMessage()+maxVarint {
			return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other,
				Text: fmt.Sprintf("signalr: record longer than %d bytes without a 0x1E separator", c.o.maxMessage())}
		}
		data = append(c.partial, data...)
		c.partial = nil
	}
	var rest []byte
	var err error
	if c.o.Protocol == MessagePack {
		rest, err = c.binary(data)
	} else {
		rest, err = SplitRecords(data, c.record)
	}
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		c.partial = append([]byte(nil), rest...)
	}
	c.partialLen.Store(int64(len(c.partial)))
	return nil
}

// binary reads MessagePack: the JSON handshake answer first (the server
// may send the first messages in the same WebSocket message), then
// length-prefixed messages.
func (c *Conn) binary(data []byte) ([]byte, error) {
	if !c.handshaken {
		i := bytes.IndexByte(data, RS)
		if i < 0 {
			return data, nil
		}
		if err := c.record(data[:i]); err != nil {
			return nil, err
		}
		data = data[i+1:]
	}
	rest, err := SplitFrames(data, c.o.maxMessage(), c.frame)
	if err != nil {
		var d *ws.Disconnect
		if !errors.As(err, &d) {
			err = &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Protocol, Text: "signalr: " + err.Error(), Err: err}
		}
	}
	return rest, err
}

// Closed implements ws.Handler: it names the hub-level reason when there
// is one.
func (c *Conn) Closed(wc *ws.Conn, d *ws.Disconnect) *ws.Disconnect {
	if c.sf != nil && (!c.sf.owns(wc, d) || c.cut(wc, d)) {
		return d
	}
	return c.finish(d)
}

// finish ends the connection (with stateful reconnect, once no reconnect
// is under way or one failed).
func (c *Conn) finish(d *ws.Disconnect) *ws.Disconnect {
	c.mu.Lock()
	sd := c.sigDisc
	hs := c.hs
	c.hs = nil
	c.mu.Unlock()
	if c.closing.Load() && (d.Reason == ws.NetworkReset || d.Reason == ws.ServerClose && sd == nil) {
		// The server answered our Close message by hanging up (with or
		// without a close frame): the end we asked for.
		d = &ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK}
	} else if sd != nil {
		d = sd
	} else if n := c.partialLen.Load(); n > 0 && d.Reason != ws.ClientClose {
		text := fmt.Sprintf("signalr: connection ended inside a record: %d bytes without a 0x1E separator", n)
		if c.o.Protocol == MessagePack && c.handshaken {
			text = fmt.Sprintf("signalr: connection ended inside a MessagePack message: %d bytes of an incomplete frame", n)
		}
		d = &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Code: d.Code, Err: d, Text: text}
	}
	if hs != nil {
		hs <- &Error{Phase: "handshake", Class: d.Class, Msg: "connection ended before the handshake answer: " + d.Error(), Err: d}
	}
	c.mu.Lock()
	c.endDisc = d
	c.mu.Unlock()
	// Exactly one of Connect and Closed counts the end: whichever finds
	// the connection open (see Connect).
	if c.state.Swap(stateEnded) == stateOpen && c.stat != nil {
		c.stat.Open.Add(-1)
		c.countEnd(d)
	}
	if c.sf != nil {
		c.sf.end(d)
	}
	return d
}

func (c *Conn) record(rec []byte) error {
	if !c.handshaken {
		c.handshaken = true
		err := ParseHandshake(rec)
		c.mu.Lock()
		hs := c.hs
		c.hs = nil
		c.mu.Unlock()
		if err != nil {
			cl := sample.Protocol
			var refused *handshakeRefused
			if errors.As(err, &refused) {
				cl = sample.Other
			}
			e := &Error{Phase: "handshake", Class: cl, Msg: err.Error(), Err: err}
			if hs != nil {
				hs <- e
			}
			return &ws.Disconnect{Reason: ws.ProtocolError, Class: cl, Text: "handshake: " + err.Error(), Err: err}
		}
		if hs != nil {
			hs <- nil
		}
		return nil
	}
	m, err := ParseMessage(rec)
	if err != nil {
		return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Protocol, Text: "signalr: " + err.Error(), Err: err}
	}
	return c.dispatch(&m)
}

// frame handles one MessagePack message.
func (c *Conn) frame(b []byte) error {
	m, err := ParseMsgPack(b)
	if err != nil {
		return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Protocol, Text: "signalr: " + err.Error(), Err: err}
	}
	return c.dispatch(&m)
}

// asJSON is a payload as callers see it: JSON (MessagePack converted; a
// value that does not convert is null, as its bytes mean nothing to a
// JSON caller). The result is the caller's to keep.
func (c *Conn) asJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if c.o.Protocol != MessagePack {
		return append(json.RawMessage(nil), raw...)
	}
	j, err := MsgPackToJSON(raw)
	if err != nil {
		return json.RawMessage("null")
	}
	return j
}

// dispatch acts on one decoded message; payloads are valid only during
// the call.
func (c *Conn) dispatch(m *Message) error {
	if c.sf != nil {
		if ok, err := c.receive(m); !ok || err != nil {
			return err
		}
	}
	switch m.Type {
	case TypeInvocation:
		c.push(m)
	case TypeStreamItem:
		c.mu.Lock()
		cl := c.calls[m.InvocationID]
		c.mu.Unlock()
		if cl != nil && cl.stream {
			cl.nitems++
			if c.stat != nil {
				c.stat.countStreamItem(cl.method)
			}
			if cl.items != nil {
				cl.items(c.asJSON(m.Item))
			}
		}
	case TypeCompletion:
		c.mu.Lock()
		cl := c.calls[m.InvocationID]
		c.forget(m.InvocationID)
		c.mu.Unlock()
		if cl != nil {
			cl.result, cl.err = c.asJSON(m.Result), m.Error
			close(cl.done)
		}
	case TypeClose:
		// A Close without an error is the server ending the connection on
		// purpose (not a reset); one with an error is the server's failure.
		// An empty error is no error, as both official clients read it.
		d := &ws.Disconnect{Reason: ws.ServerClose, Class: sample.ServerClose, Text: "signalr: server sent Close", AllowReconnect: m.AllowReconnect}
		if m.Error != "" {
			d.Class, d.Text = sample.ServerError, "signalr: server closed the connection: "+m.Error
		}
		if m.AllowReconnect {
			// The Errors table tells a server restarting for a deploy
			// (clients may come back) from one evicting them.
			d.Text += " (reconnect allowed)"
		}
		c.mu.Lock()
		c.sigDisc = d
		c.closeDisc = d
		c.mu.Unlock()
		return d
	case TypePing, TypeAck, TypeSequence, TypeStreamInvocation, TypeCancelInvocation:
		// Pings only prove the server is alive (the read already did);
		// Ack and Sequence were handled above when stateful reconnect was
		// granted, and mean nothing otherwise; the server invoking streams
		// on us is not modelled.
	}
	return nil
}

// push handles a server invocation: count it, time it, hand it on.
func (c *Conn) push(m *Message) {
	now := time.Now()
	if st := c.stat; st != nil {
		ps := st.pushes[m.Target]
		if ps == nil {
			st.OtherPushes.Add(1)
		} else {
			ps.Count.Add(1)
			if len(c.o.TimestampPath) > 0 {
				if t, ok := c.sentAt(m.Arguments); ok {
					d := now.Sub(t)
					if d < 0 {
						d = 0 // clocks of two machines; never negative
					}
					c.o.record(ps.op, sample.OK, d, nil)
				}
			}
		}
	}
	c.mu.Lock()
	fn := c.on[m.Target]
	c.mu.Unlock()
	if c.o.OnPush != nil || fn != nil {
		args := m.Arguments
		if c.o.Protocol == MessagePack {
			args = c.asJSON(args)
		}
		if c.o.OnPush != nil {
			c.o.OnPush(c, m.Target, args)
		}
		if fn != nil {
			fn(args)
		}
	}
	if m.InvocationID != "" {
		// A server awaiting a client result would wait forever; answer as
		// the .NET client does when no handler returns one.
		_ = c.sendSeq(c.o.Protocol.simple(TypeCompletion, m.InvocationID, "Client didn't provide a result."))
	}
}

// sentAt finds the send time at TimestampPath in a push's arguments: ms
// since the epoch (a number or a numeric string) in either protocol, or a
// MessagePack timestamp.
func (c *Conn) sentAt(args json.RawMessage) (time.Time, bool) {
	if c.o.Protocol == MessagePack {
		return msgpackTimeAt(args, c.o.TimestampPath)
	}
	v, ok := jsonpath.Lookup(args, c.o.TimestampPath)
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}

// raiseTo makes peak at least n.
func raiseTo(peak *atomic.Int64, n int64) {
	for {
		old := peak.Load()
		if n <= old || peak.CompareAndSwap(old, n) {
			return
		}
	}
}
