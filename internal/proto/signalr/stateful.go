package signalr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// Stateful reconnect (ASP.NET Core 8+, HubProtocol.md "Ack" and
// "Sequence"; the TypeScript client's MessageBuffer): both sides number
// the messages that matter (invocations, stream items, completions,
// cancels; never pings, closes, acks or sequences) from 1, keep what they
// sent until the peer acknowledges it, and when the WebSocket is cut the
// client dials again with the same connection token, no new handshake;
// each side then sends Sequence with the id of the first message it will
// send again, and sends its unacknowledged messages again. A receiver
// skips the ids it already has, and a Sequence beyond what it has
// received means messages were lost: the connection ends.

// sentMsg is one sequenced message kept until acknowledged.
type sentMsg struct {
	id int64
	b  []byte
}

// stateful is a connection's stateful-reconnect state.
type stateful struct {
	ep  endpoint
	hdr http.Header

	// smu orders sequenced sends with their ids, and resends after a
	// reconnect before any new send.
	smu  sync.Mutex
	sent int64     // ids 1..sent were sent
	buf  []sentMsg // not yet acknowledged, oldest first

	// rmu guards the receiving side: a cut socket's read goroutine may
	// still be inside Message while the new one starts.
	rmu       sync.Mutex
	recvNext  int64 // id the next sequenced message carries
	recvLast  int64 // highest id handled
	waitSeq   bool  // after a reconnect, nothing counts before Sequence
	ackQueued atomic.Bool

	// The transport: the live socket, nil while reconnecting.
	mu   sync.Mutex
	cur  *ws.Conn
	dead *ws.Conn // the last cut socket, whose late messages are dropped
	// A socket dialled by a reconnect that ended before it was made the
	// live one (the server resumed badly, say): resend reports its end.
	earlyWC *ws.Conn
	earlyD  *ws.Disconnect
	closing bool
	stop    chan struct{} // closed by Close/Abort while reconnecting
	// ctx is cancelled with stop: a reconnect's dial and token renewal
	// can wait on a server that accepts and never answers, and a Close
	// must not wait out the reconnect window for them.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	disc   *ws.Disconnect
}

func newStateful(ep endpoint, hdr http.Header) *stateful {
	ctx, cancel := context.WithCancel(context.Background())
	return &stateful{ep: ep, hdr: hdr, recvNext: 1, stop: make(chan struct{}), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// sequenced says whether a message type is numbered.
func sequenced(typ int) bool {
	switch typ {
	case TypeInvocation, TypeStreamItem, TypeCompletion, TypeStreamInvocation, TypeCancelInvocation:
		return true
	}
	return false
}

// seqMessage encodes Ack or Sequence.
func (p Protocol) seqMessage(typ int, id int64) []byte {
	if p == MessagePack {
		b := frameStart()
		e := msgpack.GetEncoder()
		defer msgpack.PutEncoder(e)
		e.Reset(bytesWriter{&b})
		_ = e.EncodeArrayLen(2)
		_ = e.EncodeInt(int64(typ))
		_ = e.EncodeInt(id)
		return appendFrame(b)
	}
	b := append([]byte(`{"type":`), strconv.Itoa(typ)...)
	b = append(b, `,"sequenceId":`...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, '}', RS)
}

var errReconnecting = errors.New("reconnecting")

// live is the socket messages go out on, nil while reconnecting.
func (s *stateful) live() *ws.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// sendSeq numbers, keeps and sends a sequenced message. While the socket
// is being replaced the message is only kept: the resend carries it.
func (c *Conn) sendSeq(b []byte) error {
	s := c.sf
	if s == nil {
		return c.send(b)
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	s.sent++
	s.buf = append(s.buf, sentMsg{s.sent, b})
	wc := s.live()
	if wc == nil {
		select {
		case <-s.done:
			return c.endedError()
		default:
			return nil
		}
	}
	if err := wc.Send(c.o.Protocol.wsType(), b); err != nil {
		// The socket broke under the write: the reconnect resends it.
		if s.reconnectable(wc.Disconnect(), c) {
			return nil
		}
		return err
	}
	return nil
}

func (c *Conn) endedError() error {
	d := c.sf.disconnect()
	return &ws.Error{Op: "write", Class: d.Class, Msg: "connection ended: " + d.Error(), Err: d}
}

// ack trims what the server acknowledged; an id beyond what we sent is a
// server fault.
func (c *Conn) ack(id int64) error {
	s := c.sf
	s.smu.Lock()
	defer s.smu.Unlock()
	if id < 0 || id > s.sent {
		return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other,
			Text: fmt.Sprintf("signalr: Ack for message %d, but %d were sent", id, s.sent)}
	}
	i := 0
	for i < len(s.buf) && s.buf[i].id <= id {
		i++
	}
	if i == len(s.buf) {
		s.buf = nil
	} else {
		s.buf = s.buf[i:]
	}
	return nil
}

// receive applies the sequence to one decoded message: false skips it
// (a duplicate, or anything before the Sequence that follows a
// reconnect). Called with rmu held.
func (c *Conn) receive(m *Message) (bool, error) {
	s := c.sf
	if s.waitSeq {
		if m.Type != TypeSequence {
			return false, nil
		}
		s.waitSeq = false
	}
	switch {
	case m.Type == TypeSequence:
		if m.SequenceID < 1 || m.SequenceID > s.recvNext {
			lost := m.SequenceID - s.recvNext
			if lost > 0 && c.stat != nil {
				c.stat.Lost.Add(lost)
			}
			return false, &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other,
				Text: fmt.Sprintf("signalr: Sequence %d, but %d messages were received", m.SequenceID, s.recvNext-1)}
		}
		s.recvNext = m.SequenceID
		return false, nil
	case m.Type == TypeAck:
		return false, c.ack(m.SequenceID)
	case !sequenced(m.Type):
		return true, nil
	}
	id := s.recvNext
	s.recvNext++
	if id <= s.recvLast {
		if c.stat != nil {
			c.stat.Duplicates.Add(1)
		}
		return false, nil
	}
	s.recvLast = id
	c.queueAck()
	return true, nil
}

// queueAck acknowledges what arrived after AckInterval, one Ack for a
// burst, as the .NET and JavaScript clients do; an idle connection holds
// no timer.
func (c *Conn) queueAck() {
	s := c.sf
	iv := dflt(c.o.AckInterval, time.Second)
	if iv == 0 || !s.ackQueued.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(iv, func() {
		s.ackQueued.Store(false)
		s.rmu.Lock()
		id := s.recvLast
		s.rmu.Unlock()
		if wc := s.live(); wc != nil {
			// A failed Ack is harmless: the server resends, we skip.
			_ = wc.Send(c.o.Protocol.wsType(), c.o.Protocol.seqMessage(TypeAck, id))
		}
	})
}

// reconnectable says whether a socket's end calls for a reconnect rather
// than the end of the connection.
func (s *stateful) reconnectable(d *ws.Disconnect, c *Conn) bool {
	if d == nil || c.closing.Load() || c.state.Load() != stateOpen {
		return false
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return false
	}
	return reconnectReason(d)
}

func reconnectReason(d *ws.Disconnect) bool {
	switch d.Reason {
	case ws.NetworkReset, ws.WriteFailed, ws.PingTimeout:
		return true
	}
	return false
}

// cut handles a socket that ended: true when a reconnect was started.
// Called from Closed.
func (c *Conn) cut(wc *ws.Conn, d *ws.Disconnect) bool {
	s := c.sf
	c.mu.Lock()
	sd := c.sigDisc
	c.mu.Unlock()
	if sd != nil || !s.reconnectable(d, c) {
		return false
	}
	s.mu.Lock()
	if s.cur != wc {
		// Already replaced (a write failure got here first).
		s.mu.Unlock()
		return true
	}
	s.cur, s.dead = nil, wc
	s.mu.Unlock()
	go c.reconnect(d)
	return true
}

// reconnect dials again with the same connection token until it works or
// ReconnectWindow has passed.
func (c *Conn) reconnect(cause *ws.Disconnect) {
	deadline := time.Now().Add(dflt(c.o.ReconnectWindow, 10*time.Second))
	var backoff time.Duration
	for {
		if backoff > 0 && !c.pauseUnlessStopped(backoff) {
			return
		}
		outcome, err := c.redial(deadline)
		switch {
		case outcome == redialDone:
			return
		case outcome == redialGiveUp || time.Now().After(deadline):
			c.reconnectFailed(cause, err)
			return
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 2*time.Second)
		if time.Now().Add(backoff).After(deadline) {
			c.reconnectFailed(cause, nil)
			return
		}
	}
}

// pauseUnlessStopped waits d before the next try; false means Close or
// Abort came first and the connection is finished.
func (c *Conn) pauseUnlessStopped(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.sf.stop:
		_ = c.finish(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
		return false
	}
}

type redialOutcome uint8

const (
	redialDone   redialOutcome = iota // reconnected, or finished for good
	redialRetry                       // failed; another try may work
	redialGiveUp                      // failed; no try can work
)

// redial is one try at reconnecting before deadline, with the access
// token the connection began with (token.go says why).
func (c *Conn) redial(deadline time.Time) (redialOutcome, error) {
	s := c.sf
	s.rmu.Lock()
	// A message cut in half belonged to the old socket.
	c.partial = nil
	c.partialLen.Store(0)
	s.waitSeq = true
	s.rmu.Unlock()
	ctx, cancel := context.WithDeadline(s.ctx, deadline)
	// s.hdr carries the token already when it goes in a header.
	u, err := transportURL(s.ep, true, c.o.WebSocketTokenInQuery)
	if err != nil {
		cancel()
		return redialGiveUp, err
	}
	wc, err := ws.Dial(ctx, u, s.hdr, c.o.wsOptions(), c)
	cancel()
	if err != nil && s.ctx.Err() != nil {
		// Close or Abort cut the dial short.
		_ = c.finish(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
		return redialDone, nil
	}
	if err == nil {
		if err = c.resend(wc); err == nil {
			if c.stat != nil {
				c.stat.Reconnects.Add(1)
			}
			return redialDone, nil
		}
		var d *ws.Disconnect
		if errors.As(err, &d) && !reconnectReason(d) {
			// The server answered, badly: no second chance.
			_ = c.finish(d)
			return redialDone, nil
		}
		wc.Abort()
	}
	var we *ws.Error
	if errors.As(err, &we) && we.Status == http.StatusNotFound {
		return redialGiveUp, err // the server forgot the connection
	}
	if errors.As(err, &we) && refusedToken(we.Status, s.ep.token) {
		// The same token would be refused again.
		return redialGiveUp, &Error{Phase: OpUpgrade.name, Class: we.Class, Msg: we.Msg + ": " + errTokenRefused.Error(), Err: errTokenRefused}
	}
	return redialRetry, err
}

// reconnectFailed ends the connection with its first cause, the last
// try's error, and the unacknowledged messages counted as lost.
func (c *Conn) reconnectFailed(cause *ws.Disconnect, err error) {
	s := c.sf
	s.smu.Lock()
	lost := int64(len(s.buf))
	s.smu.Unlock()
	if c.stat != nil {
		c.stat.ReconnectFailures.Add(1)
		c.stat.Lost.Add(lost)
	}
	msg := "stateful reconnect failed"
	if err != nil {
		msg += ": " + err.Error()
	}
	// err joins the cause so a refused token stays visible (tokenRefused).
	_ = c.finish(&ws.Disconnect{Reason: endReason(err, cause.Reason), Class: cause.Class, Code: cause.Code, Err: errors.Join(cause, err),
		Text: cause.Error() + "; " + msg})
}

// resend sends Sequence and the unacknowledged messages on a new socket,
// then makes it the live one.
func (c *Conn) resend(wc *ws.Conn) error {
	s := c.sf
	s.smu.Lock()
	defer s.smu.Unlock()
	first := s.sent + 1
	if len(s.buf) > 0 {
		first = s.buf[0].id
	}
	typ := c.o.Protocol.wsType()
	err := wc.Send(typ, c.o.Protocol.seqMessage(TypeSequence, first))
	for i := 0; err == nil && i < len(s.buf); i++ {
		err = wc.Send(typ, s.buf[i].b)
	}
	if err != nil {
		// The socket ended under the resend; Closed saw it first.
		<-wc.Done()
		if d := s.takeEarly(wc); d != nil {
			return d
		}
		return err
	}
	s.mu.Lock()
	if s.earlyWC == wc {
		d := s.earlyD
		s.earlyWC, s.earlyD = nil, nil
		s.mu.Unlock()
		return d
	}
	closing := s.closing
	s.cur = wc
	s.mu.Unlock()
	if c.stat != nil {
		c.stat.Recovered.Add(int64(len(s.buf)))
	}
	if closing {
		wc.Close(1000, "")
	}
	return nil
}

// stale says whether a message comes from a socket already replaced.
func (s *stateful) stale(wc *ws.Conn) bool {
	if wc == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return wc == s.dead
}

func (s *stateful) disconnect() *ws.Disconnect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disc
}

// The transport methods: Conn.t is the stateful itself, so callers keep
// one Done and one Disconnect across sockets.

func (s *stateful) Send(typ ws.MessageType, b []byte) error {
	if wc := s.live(); wc != nil {
		return wc.Send(typ, b)
	}
	select {
	case <-s.done:
		d := s.disconnect()
		return &ws.Error{Op: "write", Class: d.Class, Msg: "connection ended: " + d.Error(), Err: d}
	default:
		return &ws.Error{Op: "write", Class: sample.ConnReset, Msg: "reconnecting", Err: errReconnecting}
	}
}

func (s *stateful) Done() <-chan struct{} { return s.done }

func (s *stateful) Disconnect() *ws.Disconnect { return s.disconnect() }

func (s *stateful) Close(code int, reason string) error {
	wc := s.halt()
	if wc != nil {
		wc.Close(code, reason)
	}
	<-s.done
	return nil
}

func (s *stateful) Abort() {
	if wc := s.halt(); wc != nil {
		wc.Abort()
	}
}

// halt stops reconnecting and returns the live socket, if any.
func (s *stateful) halt() *ws.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.stop)
		s.cancel()
	}
	return s.cur
}

// end records the final reason, once.
func (s *stateful) end(d *ws.Disconnect) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disc != nil {
		return
	}
	s.disc = d
	close(s.done)
}

// owns says whether wc's end is the connection's to handle: wc is the
// live socket (or the first, before Connect has it). The end of a socket
// already replaced is nobody's; that of one a reconnect dialled and has
// not made live yet is kept for resend to report.
func (s *stateful) owns(wc *ws.Conn, d *ws.Disconnect) bool {
	if wc == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cur == wc || s.cur == nil && s.dead == nil:
		return true
	case s.cur == nil && wc != s.dead:
		s.earlyWC, s.earlyD = wc, d
	}
	return false
}

func (s *stateful) takeEarly(wc *ws.Conn) *ws.Disconnect {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.earlyWC != wc {
		return nil
	}
	d := s.earlyD
	s.earlyWC, s.earlyD = nil, nil
	return d
}
