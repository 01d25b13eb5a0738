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
	"bytes"
	"context"
	"crypto/tls"
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

// Options configure every connection of a population; shared, read-only
// once the first connection starts.
type Options struct {
	// AccessToken is sent as a bearer token on negotiate and as
	// access_token on the WebSocket URL.
	AccessToken string
	// HTTPClient is used for negotiate (default: when TLS is set, a pool
	// of these Options' own over a clone of TLS; else a shared pool).
	HTTPClient *http.Client
	// TLS configures negotiate (when HTTPClient is nil) and wss://
	// upgrades: custom CA, client certificate, server name. Each gets a
	// clone, so net/http adding "h2" to its copy never reaches the
	// upgrade, which offers only http/1.1.
	TLS *tls.Config
	// SkipNegotiate connects the WebSocket directly, as clients configured
	// with skipNegotiation do.
	SkipNegotiate bool
	// Protocol is the hub protocol (default JSON).
	Protocol Protocol
	// Transport is the transport (default WebSockets); Server-Sent
	// Events and long polling need negotiate.
	Transport Transport

	NegotiateTimeout time.Duration // default 15s, all redirects together
	UpgradeTimeout   time.Duration // default 15s
	HandshakeTimeout time.Duration // default 15s
	// KeepAlive sends a Ping when nothing else was sent for this long
	// (default 15s, as the .NET and JavaScript clients; negative: never).
	KeepAlive time.Duration
	// ServerTimeout ends the connection when the server sent nothing for
	// this long (default 30s; negative: never).
	ServerTimeout time.Duration
	// InvokeTimeout bounds an Invoke or Stream whose context has no
	// deadline (default 30s).
	InvokeTimeout time.Duration
	// MaxMessage is the largest WebSocket message and the largest record
	// accepted (default 1 MiB).
	MaxMessage int64
	// TimestampPath locates a send time (ms since the epoch, number or
	// numeric string) in a push's arguments array, e.g. ["0","sentAt"];
	// when found, push latency is recorded.
	TimestampPath []string
	// StatefulReconnect asks negotiate for stateful reconnect (ASP.NET
	// Core 8+, WebSockets only): when granted, sent messages are kept
	// until acknowledged, and a cut socket is dialled again with the same
	// connection token and the unacknowledged messages sent again.
	StatefulReconnect bool
	// AckInterval is how long after a message arrives its Ack goes (one
	// for a burst; default 1s, as the .NET and JavaScript clients;
	// negative: never).
	AckInterval time.Duration
	// ReconnectWindow bounds a stateful reconnect's attempts (default
	// 10s).
	ReconnectWindow time.Duration
	// Stats counts the population; nil counts nothing.
	Stats *Stats
	// Recorder receives latencies and failures; nil records nothing.
	Recorder Recorder
	// OnPush, when set, sees every server invocation (on the read
	// goroutine; args valid only during the call).
	OnPush func(c *Conn, target string, args json.RawMessage)

	once sync.Once
	wso  ws.Options
	hc   *http.Client
	sc   *http.Client // SSE and long polling; see streamClient
}

func (o *Options) wsOptions() *ws.Options {
	o.once.Do(func() {
		o.wso = ws.Options{
			ConnectTimeout:   dflt(o.UpgradeTimeout, 15*time.Second),
			ReadLimit:        o.maxMessage(),
			KeepAlive:        dflt(o.KeepAlive, 15*time.Second),
			KeepAliveMessage: o.Protocol.ping(),
			KeepAliveType:    o.Protocol.wsType(),
			IdleTimeout:      dflt(o.ServerTimeout, 30*time.Second),
			TLS:              o.TLS,
		}
		if o.Stats != nil {
			o.wso.Counters = &o.Stats.Counters
		}
		o.hc = o.HTTPClient
		if o.hc == nil && o.TLS != nil {
			o.hc = newNegotiateClient(o.TLS.Clone())
		}
		if o.hc == nil {
			o.hc = sharedHTTP
		}
		o.sc = o.HTTPClient
		if o.sc == nil && (o.Transport != WebSockets) {
			o.sc = newStreamClient(o.TLS)
		}
	})
	return &o.wso
}

func (o *Options) httpClient() *http.Client {
	o.wsOptions()
	return o.hc
}

// streamClient carries SSE and long-polling requests and sends.
func (o *Options) streamClient() *http.Client {
	o.wsOptions()
	return o.sc
}

// CloseIdleConnections drops the negotiate client's idle connections
// (when the population has one of its own), at the end of a run.
func (o *Options) CloseIdleConnections() {
	if hc := o.httpClient(); hc != sharedHTTP {
		hc.CloseIdleConnections()
	}
	if sc := o.streamClient(); sc != nil {
		sc.CloseIdleConnections()
	}
}

func (o *Options) maxMessage() int64 {
	if o.MaxMessage > 0 {
		return o.MaxMessage
	}
	return 1 << 20
}

// dflt: zero means the default, negative means off.
func dflt(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// Protocol is a hub protocol.
type Protocol uint8

const (
	JSON        Protocol = iota // text records ended by 0x1E
	MessagePack                 // binary, varint length prefixes
)

// String is the protocol's name in a handshake and a plan.
func (p Protocol) String() string {
	if p == MessagePack {
		return "messagepack"
	}
	return "json"
}

// ProtocolNamed is the protocol a plan names ("json" or "messagepack";
// anything else is JSON, the plan parser having refused it).
func ProtocolNamed(name string) Protocol {
	if name == "messagepack" {
		return MessagePack
	}
	return JSON
}

// transferFormat is what negotiate must offer for the protocol.
func (p Protocol) transferFormat() string {
	if p == MessagePack {
		return "Binary"
	}
	return "Text"
}

func (p Protocol) wsType() ws.MessageType {
	if p == MessagePack {
		return ws.Binary
	}
	return ws.Text
}

func (p Protocol) handshake() []byte {
	if p == MessagePack {
		return msgpackHandshake
	}
	return handshakeRequest
}

func (p Protocol) ping() []byte {
	if p == MessagePack {
		return msgpackPing
	}
	return pingRecord
}

func (p Protocol) close() []byte {
	if p == MessagePack {
		return msgpackClose
	}
	return closeRecord
}

func (p Protocol) invocation(typ int, id, target string, args []any) ([]byte, error) {
	if p == MessagePack {
		return appendMsgPackInvocation(typ, id, target, args)
	}
	return appendInvocation(nil, typ, id, target, args)
}

func (p Protocol) simple(typ int, id, errText string) []byte {
	if p == MessagePack {
		return appendMsgPackSimple(typ, id, errText)
	}
	return appendSimple(nil, typ, id, errText)
}

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
	sf   *stateful   // nil unless stateful reconnect was granted
	tk   *tokenState // nil unless a redirect's access token expires
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
			o.record(phaseOp(e.Phase), e.Class, 0, err)
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
			t0 := time.Now()
			var err error
			ep, err = negotiate(nctx, hc, hub, hdr, o.AccessToken, o.StatefulReconnect)
			cancel()
			d := time.Since(t0)
			tm.Negotiate += d
			if err != nil {
				var e *Error
				if errors.As(err, &e) && e.Class == sample.Interrupted && errors.Is(nctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
					e.Class, e.Msg = sample.Timeout, "no answer within "+dflt(o.NegotiateTimeout, 15*time.Second).String()
				}
				return nil, err
			}
			o.record(OpNegotiate, sample.OK, d, nil)
		}
		if order == nil {
			var err error
			if order, err = candidates(o.Transport, ep.nr, o.Protocol); err != nil {
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
		o.record(phaseOp(e.Phase), e.Class, 0, err)
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
	if !o.SkipNegotiate {
		c.tk = newTokenState(hub, hdr, ep, o.AccessToken)
	}
	if kind == WebSockets {
		u, err := transportURL(ep, true)
		if err != nil {
			return nil, &Error{Phase: "upgrade", Class: sample.Other, Msg: "bad hub URL: " + err.Error(), Err: err}
		}
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
		c.sendSeq(c.o.Protocol.simple(TypeCancelInvocation, id, ""))
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
		c.send(c.o.Protocol.close())
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
			err = &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: " + err.Error(), Err: err}
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
			e := &Error{Phase: "handshake", Class: sample.Other, Msg: err.Error(), Err: err}
			if hs != nil {
				hs <- e
			}
			return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "handshake: " + err.Error(), Err: err}
		}
		if hs != nil {
			hs <- nil
		}
		return nil
	}
	m, err := ParseMessage(rec)
	if err != nil {
		return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: " + err.Error(), Err: err}
	}
	return c.dispatch(&m)
}

// frame handles one MessagePack message.
func (c *Conn) frame(b []byte) error {
	m, err := ParseMsgPack(b)
	if err != nil {
		return &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: " + err.Error(), Err: err}
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
		d := &ws.Disconnect{Reason: ws.ServerClose, Class: sample.ConnReset, Text: "signalr: server sent Close", AllowReconnect: m.AllowReconnect}
		if m.Error != "" {
			d.Class, d.Text = sample.Other, "signalr: server closed the connection: "+m.Error
		}
		if m.AllowReconnect {
			// The Errors table tells a server restarting for a deploy
			// (clients may come back) from one evicting them.
			d.Text += " (reconnect allowed)"
		}
		c.mu.Lock()
		c.sigDisc = d
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
		c.sendSeq(c.o.Protocol.simple(TypeCompletion, m.InvocationID, "Client didn't provide a result."))
	}
}

// sentAt finds the send time at TimestampPath in a push's arguments: ms
// since the epoch (a number or a numeric string) in either protocol, or a
// MessagePack timestamp.
func (c *Conn) sentAt(args json.RawMessage) (time.Time, bool) {
	if c.o.Protocol == MessagePack {
		return msgpackTimeAt(args, c.o.TimestampPath)
	}
	v, ok := ws.JSONAt(args, c.o.TimestampPath)
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
