// Package signalr speaks the ASP.NET Core SignalR hub protocols (JSON, and
// MessagePack with varint-framed binary messages) over WebSockets,
// Server-Sent Events or long polling for load tests: negotiate (with Azure
// SignalR Service style redirects and transport fallback), the
// 0x1E-framed handshake, keep-alive pings, invocations
// awaited by invocationId, fire-and-forget sends, streams, and counted
// server pushes. One connection costs one read goroutine and no other
// goroutine while idle; see package ws for the memory layout.
package signalr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// Timing is the connect time split as reports show it.
type Timing struct {
	Negotiate time.Duration // all negotiate round trips, redirects included
	Upgrade   time.Duration // WebSocket connect: TCP + 101
	Handshake time.Duration // handshake request to its answer
}

// Conn is one hub connection. Invoke, Send, Stream and Close are safe from
// any goroutine.
type Conn struct {
	t    transport
	sf   *stateful // nil unless stateful reconnect was granted
	o    *Options
	cid  string
	stat *Stats

	Timing Timing

	// Read-goroutine state.
	handshaken bool
	kind       Transport
	partial    []byte       // a record or frame split across WebSocket messages
	partialLen atomic.Int64 // its length, for Closed on other goroutines

	state atomic.Int32 // stateNew, stateOpen, stateEnded
	// closing is set by Close before the Close message goes out: a server
	// that hangs up on reading it ends a connection we were ending.
	closing atomic.Bool
	// atEnd is set by CloseAtEnd: the connection is counted open at the
	// end, not as a disconnect.
	atEnd atomic.Bool

	mu     sync.Mutex
	hs     chan error // handshake outcome, nil once delivered
	calls  map[string]*call
	nextID uint64
	on     map[string]func(json.RawMessage)
	// sigDisc is a reason the hub protocol decided (Close message, bad
	// record) before the socket went.
	sigDisc *ws.Disconnect
	// closeDisc is sigDisc when a Close message set it, so the end is
	// counted by what the Close said.
	closeDisc *ws.Disconnect
	// endDisc is the final reason, set by Closed before the state ends.
	endDisc *ws.Disconnect
}

const (
	stateNew int32 = iota
	stateOpen
	stateEnded
)

type call struct {
	method string
	done   chan struct{}
	result json.RawMessage
	err    string
	stream bool
	items  func(json.RawMessage) // nil: items are only counted
	nitems int
}

// Connect negotiates, opens the WebSocket and completes the handshake.
// hdr goes with negotiate and the upgrade and may be nil. A failure is an
// *Error whose Phase says which step failed.
func Connect(ctx context.Context, hub string, hdr http.Header, o *Options) (*Conn, error) {
	st := o.Stats
	if st != nil {
		st.Connecting.Add(1)
		defer st.Connecting.Add(-1)
	}
	c, err := connect(ctx, hub, hdr, o)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			o.record(phaseOp(e.Phase), e.Class, e.took, err)
		}
		return nil, err
	}
	switch {
	case st == nil:
	case c.state.CompareAndSwap(stateNew, stateOpen):
		raiseTo(&st.PeakOpen, st.Open.Add(1))
		st.Opened.Add(1)
		st.Transports[c.kind].Add(1)
	default:
		// Closed ran first: the server hung up right after the
		// handshake. The connection did open, so it is counted opened
		// and ended here (Closed left it to us), keeping opened = open +
		// ended; before, such connections were opened for the caller
		// but in no counter, and disconnects came up short.
		st.Opened.Add(1)
		st.Transports[c.kind].Add(1)
		c.mu.Lock()
		d := c.endDisc
		c.mu.Unlock()
		c.countEnd(d)
	}
	return c, nil
}

// countEnd counts a connection that was counted opened and has ended.
func (c *Conn) countEnd(d *ws.Disconnect) {
	if c.atEnd.Load() {
		c.stat.ClosedAtEnd.Add(1)
		return
	}
	c.stat.Disconnects[d.Reason].Add(1)
	if tokenRefused(d) {
		c.stat.TokenRefusals.Add(1)
		c.stat.restarts.n.Add(1)
	}
	c.mu.Lock()
	byClose := d == c.closeDisc
	c.mu.Unlock()
	if byClose {
		kind := CloseGraceful
		if d.Class == sample.ServerError {
			kind = CloseError
		}
		c.stat.ServerCloses[kind].Add(1)
		if d.AllowReconnect {
			c.stat.ServerCloses[CloseAllowReconnect].Add(1)
		}
	}
}

func connect(ctx context.Context, hub string, hdr http.Header, o *Options) (*Conn, error) {
	var tm Timing
	var order []Transport
	for i := 0; ; i++ {
		ep := endpoint{base: hub, token: o.AccessToken}
		if !o.SkipNegotiate {
			// Each transport tried gets a connection of its own: the
			// server ties a negotiated id to the first transport that
			// uses it.
			hc := o.httpClient()
			nctx, cancel := context.WithTimeout(ctx, dflt(o.NegotiateTimeout, 15*time.Second))
			first := OpNegotiate
			if i == 0 && o.Stats != nil && o.Stats.restarts.take() {
				first = OpNegotiateRestart
			}
			// The first answer decides the transports tried, as in the
			// official clients; one offering none the scenario can use
			// is that negotiate's failure (recorded once, under its hop).
			var usable func(*negotiateResponse) error
			if order == nil {
				usable = func(nr *negotiateResponse) (err error) {
					order, err = candidates(o.Transport, nr, o.Protocol)
					return err
				}
			}
			t0 := time.Now()
			var err error
			ep, err = negotiate(nctx, hc, hub, hdr, o, first, usable)
			cancel()
			tm.Negotiate += time.Since(t0)
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Class == sample.Interrupted && errors.Is(nctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
					e.Class, e.Msg = sample.Timeout, "no answer within "+dflt(o.NegotiateTimeout, 15*time.Second).String()
				}
				return nil, err
			}
		}
		if order == nil { // negotiate skipped
			var err error
			if order, err = candidates(o.Transport, nil, o.Protocol); err != nil {
				return nil, err
			}
		}
		c, err := start(ctx, hub, order[i], ep, hdr, o, &tm)
		var e *Error
		if err == nil || i+1 == len(order) || ctx.Err() != nil || !errors.As(err, &e) || e.Phase == OpHandshake.name {
			return c, err
		}
		// The transport could not start (a proxy that refuses WebSocket
		// upgrades, say): the failure is counted, and the next transport
		// tried, as ASP.NET Core clients do.
		o.record(phaseOp(e.Phase), e.Class, e.took, err)
		if o.Stats != nil {
			o.Stats.Fallbacks.Add(1)
		}
	}
}

// start opens one transport for a negotiated connection and completes the
// handshake over it.
func start(ctx context.Context, hub string, kind Transport, ep endpoint, hdr http.Header, o *Options, tm *Timing) (*Conn, error) {
	// The read loop takes c.hs (and nils it) when the answer comes, which
	// may be before we look: keep our own reference.
	hs := make(chan error, 1)
	c := &Conn{o: o, cid: ep.cid, stat: o.Stats, hs: hs, kind: kind}
	if kind == WebSockets {
		u, err := transportURL(ep, true, o.WebSocketTokenInQuery)
		if err != nil {
			return nil, &Error{Phase: "upgrade", Class: sample.Other, Msg: "bad hub URL: " + err.Error(), Err: err}
		}
		hdr = wsTokenHeader(hdr, ep.token, o.WebSocketTokenInQuery)
		if o.StatefulReconnect && ep.nr != nil && ep.nr.UseStatefulReconnect {
			c.sf = newStateful(ep, hdr)
		}
		wc, err := ws.Dial(ctx, u, hdr, o.wsOptions(), c)
		if err != nil {
			var we *ws.Error
			cl, msg := ws.Classify(err), err.Error()
			if errors.As(err, &we) {
				msg = we.Msg
			}
			return nil, &Error{Phase: "upgrade", Class: cl, Msg: msg, Err: err}
		}
		c.t = wc
		if c.sf != nil {
			c.sf.mu.Lock()
			c.sf.cur = wc
			c.sf.mu.Unlock()
			c.t = c.sf
		}
		tm.Upgrade = wc.Timing.Upgrade
		o.record(OpUpgrade, sample.OK, tm.Upgrade, nil)
	} else {
		if ep.nr == nil {
			return nil, &Error{Phase: phaseOf(kind), Class: sample.Other, Msg: kind.String() + " needs negotiate: only WebSockets can skip it"}
		}
		// startHTTP sets c.t itself, before its goroutines start.
		_, open, err := startHTTP(ctx, kind, o, c, ep, hdr)
		if err != nil {
			return nil, err
		}
		if kind == ServerSentEvents {
			tm.Upgrade = open
			o.record(OpSSEOpen, sample.OK, open, nil)
		}
	}

	t0 := time.Now()
	if err := c.t.Send(o.Protocol.wsType(), o.Protocol.handshake()); err != nil {
		c.t.Abort()
		return nil, &Error{Phase: "handshake", Class: ws.Classify(err), Msg: err.Error(), Err: err}
	}
	hto := dflt(o.HandshakeTimeout, 15*time.Second)
	timer := time.NewTimer(hto)
	defer timer.Stop()
	var err error
	select {
	case err = <-hs:
	case <-timer.C:
		c.t.Abort()
		return nil, &Error{Phase: "handshake", Class: sample.Timeout, Msg: "no answer within " + hto.String()}
	case <-ctx.Done():
		c.t.Abort()
		return nil, &Error{Phase: "handshake", Class: sample.Interrupted, Msg: "canceled", Err: ctx.Err()}
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Phase: "handshake", Class: sample.Other, Msg: err.Error(), Err: err}
		}
		c.t.Abort()
		return nil, e
	}
	tm.Handshake = time.Since(t0)
	c.Timing = *tm
	o.record(OpHandshake, sample.OK, tm.Handshake, nil)
	return c, nil
}

// Transport is the transport the connection runs on.
func (c *Conn) Transport() Transport { return c.kind }

// ConnectionID is the id other clients and the server know this
// connection by (empty when negotiate was skipped).
func (c *Conn) ConnectionID() string { return c.cid }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.t.Done() }

// Disconnect says why the connection ended; nil while open.
func (c *Conn) Disconnect() *ws.Disconnect { return c.t.Disconnect() }

// On registers fn for pushes to target on this connection (counting per
// target happens in Stats whether or not a listener is registered).
func (c *Conn) On(target string, fn func(args json.RawMessage)) {
	c.mu.Lock()
	if c.on == nil {
		c.on = map[string]func(json.RawMessage){}
	}
	c.on[target] = fn
	c.mu.Unlock()
}

var errNoSocket = errors.New("no socket")

func (c *Conn) send(b []byte) error {
	if c.t == nil { // only in the fuzz test, which feeds Message directly
		return errNoSocket
	}
	return c.t.Send(c.o.Protocol.wsType(), b)
}

// Invoke calls a hub method and waits for its Completion. The result is
// the raw JSON result (nil for void methods; under MessagePack, the
// result converted to JSON). A hub error is class
// server_error with the hub's text.
func (c *Conn) Invoke(ctx context.Context, method string, args ...any) (json.RawMessage, error) {
	r, _, err := c.call(ctx, "invoke", TypeInvocation, method, args, nil)
	return r, err
}

// Stream starts a streaming invocation and calls onItem for each item (on
// the read goroutine) until the Completion. It returns how many items came.
func (c *Conn) Stream(ctx context.Context, method string, args []any, onItem func(json.RawMessage)) (int, error) {
	_, n, err := c.call(ctx, "stream", TypeStreamInvocation, method, args, onItem)
	return n, err
}

func (c *Conn) call(ctx context.Context, phase string, typ int, method string, args []any, items func(json.RawMessage)) (json.RawMessage, int, error) {
	name := Op{phase + " " + method}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dflt(c.o.InvokeTimeout, 30*time.Second))
		defer cancel()
	}
	cl := &call{method: method, done: make(chan struct{}), stream: typ == TypeStreamInvocation, items: items}
	c.mu.Lock()
	c.nextID++
	id := strconv.FormatUint(c.nextID, 10)
	if c.calls == nil {
		c.calls = map[string]*call{}
	}
	c.calls[id] = cl
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		c.forget(id)
		c.mu.Unlock()
	}

	msg, err := c.o.Protocol.invocation(typ, id, method, args)
	if err != nil {
		forget()
		e := &Error{Phase: phase, Class: sample.Other, Msg: "encoding arguments of " + method + ": " + err.Error(), Err: err}
		c.o.record(name, e.Class, 0, e)
		return nil, 0, e
	}
	t0 := time.Now()
	if err := c.sendSeq(msg); err != nil {
		forget()
		e := &Error{Phase: phase, Class: ws.Classify(err), Msg: method + ": " + err.Error(), Err: err}
		c.o.record(name, e.Class, time.Since(t0), e)
		return nil, 0, e
	}
	select {
	case <-cl.done:
		d := time.Since(t0)
		if cl.err != "" {
			e := &Error{Phase: phase, Class: sample.ServerError, Msg: method + ": hub error: " + cl.err}
			c.o.record(name, e.Class, d, e)
			return nil, cl.nitems, e
		}
		c.o.record(name, sample.OK, d, nil)
		return cl.result, cl.nitems, nil
	case <-c.t.Done():
		forget()
		d := c.t.Disconnect()
		e := &Error{Phase: phase, Class: d.Class, Msg: fmt.Sprintf("%s: connection ended before its Completion: %v", method, d), Err: d}
		c.o.record(name, e.Class, time.Since(t0), e)
		return nil, 0, e
	case <-ctx.Done():
		forget()
		// Tell the server we gave up, so a stream stops producing.
		_ = c.sendSeq(c.o.Protocol.simple(TypeCancelInvocation, id, ""))
		e := &Error{Phase: phase, Class: sample.Timeout, Msg: method + ": no Completion before the deadline", Err: ctx.Err()}
		if errors.Is(ctx.Err(), context.Canceled) {
			e.Class, e.Msg = sample.Interrupted, method+": canceled"
		}
		c.o.record(name, e.Class, time.Since(t0), e)
		return nil, 0, e
	}
}

// forget drops a finished call. An empty map is dropped too: maps never
// shrink, and an idle connection that once joined a group should not keep
// a few hundred bytes of empty buckets. Called with c.mu held.
func (c *Conn) forget(id string) {
	delete(c.calls, id)
	if len(c.calls) == 0 {
		c.calls = nil
	}
}

// Send invokes a hub method without an invocationId: the server sends no
// Completion, so only the write is timed.
func (c *Conn) Send(method string, args ...any) error {
	name := SendOp(method)
	msg, err := c.o.Protocol.invocation(TypeInvocation, "", method, args)
	if err != nil {
		e := &Error{Phase: "send", Class: sample.Other, Msg: "encoding arguments of " + method + ": " + err.Error(), Err: err}
		c.o.record(name, e.Class, 0, e)
		return e
	}
	t0 := time.Now()
	if err := c.sendSeq(msg); err != nil {
		e := &Error{Phase: "send", Class: ws.Classify(err), Msg: method + ": " + err.Error(), Err: err}
		c.o.record(name, e.Class, time.Since(t0), e)
		return e
	}
	c.o.record(name, sample.OK, time.Since(t0), nil)
	return nil
}

// Close ends the connection politely: a Close message, then a WebSocket
// close frame.
func (c *Conn) Close() error {
	if c.t.Disconnect() == nil {
		c.closing.Store(true)
		_ = c.send(c.o.Protocol.close())
	}
	return c.t.Close(1000, "")
}

// CloseAtEnd closes politely because the run (or the caller's hold)
// ended: the connection is counted in Stats.ClosedAtEnd, not as a
// disconnect, unless it had already ended on its own.
func (c *Conn) CloseAtEnd() error {
	c.atEnd.Store(true)
	return c.Close()
}

// Abort drops the connection without any goodbye (end of a run).
func (c *Conn) Abort() { c.t.Abort() }
