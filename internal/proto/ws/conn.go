// Package ws holds WebSocket connections for load tests: many of them, mostly
// idle. The client is gorilla/websocket configured so an idle connection
// owns one small read buffer and no goroutine: on Linux a plain (ws://)
// connection is read when its socket becomes readable (evread.go), while
// TLS connections, and every connection elsewhere, keep one goroutine (the
// read loop). Write buffers come from a shared pool only while a message
// is written, and keep-alive and silence detection of every connection
// share one timer in the process (sweep.go). With coder/websocket an idle
// connection cost about 15 KB (two 4 KB bufio buffers it keeps for life,
// plus the net/http upgrade reader); with a parked read goroutine, about
// 2.2 KB of heap and a 2-8 KB stack; now about 1.8 KB of heap and stack
// together (TestIdleConnMemory).
package ws

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/readiness"
	"github.com/stampede-load/stampede/internal/sample"
)

// MessageType is a WebSocket data message type.
type MessageType int

const (
	Text   MessageType = websocket.TextMessage
	Binary MessageType = websocket.BinaryMessage
)

// Options configure every connection of a population. They are shared and
// must not change once the first connection is dialed.
type Options struct {
	Subprotocols []string
	TLS          *tls.Config
	// ConnectTimeout bounds TCP connect plus upgrade (default 10s).
	ConnectTimeout time.Duration
	// WriteTimeout bounds one send (default 10s).
	WriteTimeout time.Duration
	// ReadLimit is the largest message accepted; a larger one ends the
	// connection as a protocol error (default 1 MiB).
	ReadLimit int64
	// ReadBufferSize is the per-connection read buffer, the one buffer an
	// idle connection keeps (default 128, about the least gorilla takes:
	// a control frame's payload must fit; messages may be larger, as a
	// read bigger than the buffer bypasses it).
	ReadBufferSize int
	// KeepAlive sends something when nothing was sent for this long
	// (0: never). KeepAliveMessage is what (nil: a WebSocket ping frame),
	// sent as a KeepAliveType message (0: Text).
	KeepAlive        time.Duration
	KeepAliveMessage []byte
	KeepAliveType    MessageType
	// IdleTimeout ends the connection as PingTimeout when nothing at all
	// arrived for this long (0: never).
	IdleTimeout time.Duration
	// CloseTimeout bounds the wait for the peer's close frame (default 1s).
	CloseTimeout time.Duration
	// Backlog keeps up to this many messages that no waiter matched, so a
	// WaitFor called just after the answer arrived still sees it. 0 keeps
	// none: connections that only listen hold no message memory.
	Backlog int
	// Counters, when set, counts messages and bytes of every connection.
	Counters *Counters
	// NetDial replaces the TCP dialer (tests, source-address pools).
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)

	// goroutineReads keeps a reading goroutine per connection where
	// readiness would serve (tests compare the two).
	goroutineReads bool

	tlsOnce sync.Once
	tlsConf *tls.Config
}

// tlsConfig is TLS as the upgrade needs it: a clone of our own that offers
// only http/1.1. A config that net/http has used carries "h2" in its
// NextProtos; a server that picks h2 then reads our HTTP/1.1 upgrade
// request as a broken HTTP/2 preface and the connection dies (WebSockets
// over HTTP/2, RFC 8441, is another protocol that gorilla does not speak).
// Cloned once, as o must not change after the first dial.
func (o *Options) tlsConfig() *tls.Config {
	o.tlsOnce.Do(func() {
		if o.TLS != nil {
			c := o.TLS.Clone()
			c.NextProtos = []string{"http/1.1"}
			o.tlsConf = c
		}
	})
	return o.tlsConf
}

func (o *Options) connectTimeout() time.Duration { return orDefault(o.ConnectTimeout, 10*time.Second) }
func (o *Options) writeTimeout() time.Duration   { return orDefault(o.WriteTimeout, 10*time.Second) }
func (o *Options) closeTimeout() time.Duration   { return orDefault(o.CloseTimeout, time.Second) }

func (o *Options) readLimit() int64 {
	if o.ReadLimit > 0 {
		return o.ReadLimit
	}
	return 1 << 20
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Counters are shared by a population; atomics, because the read loops of
// thousands of connections add to them.
type Counters struct {
	MsgsIn, MsgsOut, BytesIn, BytesOut atomic.Int64
}

// Handler receives every data message on the goroutine reading the
// connection: one message at a time, in order, though not always on the
// same goroutine (evread.go). data is valid only during the call. Returning an error ends the
// connection; a *Disconnect keeps its reason and class, anything else is
// a protocol error.
type Handler interface {
	Message(c *Conn, typ MessageType, data []byte) error
	// Closed is called once when the connection ends; it may return a
	// better-informed Disconnect (nil keeps d).
	Closed(c *Conn, d *Disconnect) *Disconnect
}

// Timing is how long connecting took.
type Timing struct {
	TCP     time.Duration // TCP connect (and TLS)
	Upgrade time.Duration // from dial start to the 101 answer, TCP included
}

// Conn is one WebSocket connection. Send, WaitFor and Close are safe from
// any goroutine.
type Conn struct {
	ws *websocket.Conn
	o  *Options
	h  Handler

	wmu       sync.Mutex
	lastRead  atomic.Int64 // clock() at the last frame of any kind
	lastWrite atomic.Int64
	due       int64        // clock() of the next keep-alive or silence check (sweep.go)
	slot      int32        // index in sweep's queue; -1: not in it
	busy      atomic.Int32 // 1 while the reader counts and delivers a message (see handle)
	closing   atomic.Bool  // Close was called: the peer's close frame is expected
	ended     atomic.Bool
	done      chan struct{}

	mu      sync.Mutex // guards disc, waiters, backlog
	disc    *Disconnect
	waiters []*Waiter
	nwait   atomic.Int32
	backlog [][]byte

	// reg is the socket's readiness registration (evread.go); nil when a
	// goroutine reads. ev is the reading state between readinesses.
	reg *readiness.Reg
	ev  *evState

	Timing Timing
}

var base = time.Now()

// clock is monotonic nanoseconds; one int64 per timestamp keeps idle
// connections small.
func clock() int64 { return int64(time.Since(base)) }

// writePool lends write buffers only while a message is being written.
var writePool = &sync.Pool{}

// Dial connects to url (ws://, wss://, http:// or https://) and starts the
// read loop. hdr is sent with the upgrade request and may be nil. h may be
// nil when the caller only sends and waits.
func Dial(ctx context.Context, url string, hdr http.Header, o *Options, h Handler) (*Conn, error) {
	switch {
	case strings.HasPrefix(url, "http://"):
		url = "ws://" + url[len("http://"):]
	case strings.HasPrefix(url, "https://"):
		url = "wss://" + url[len("https://"):]
	}
	ctx, cancel := context.WithTimeout(ctx, o.connectTimeout())
	defer cancel()
	rb := o.ReadBufferSize
	if rb <= 0 {
		rb = 128
	}
	start := time.Now()
	var tcp time.Duration
	var stop func() bool
	// Plain connections are read on readiness (evread.go); TLS ones keep
	// a reading goroutine.
	var hs *hsConn
	evReads := readiness.Supported() && !o.goroutineReads && strings.HasPrefix(url, "ws://")
	d := &websocket.Dialer{
		TLSClientConfig: o.tlsConfig(),
		ReadBufferSize:  rb,
		WriteBufferPool: writePool,
		Subprotocols:    o.Subprotocols,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var nc net.Conn
			var err error
			if o.NetDial != nil {
				nc, err = o.NetDial(ctx, network, addr)
			} else {
				var nd net.Dialer
				nc, err = nd.DialContext(ctx, network, addr)
			}
			tcp = time.Since(start)
			if err == nil {
				// gorilla only applies the deadline to the upgrade, so a
				// run that is stopped would wait for it; cut the socket
				// when the context ends.
				stop = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
				if evReads {
					hs = &hsConn{Conn: nc}
					return hs, nil
				}
			}
			return nc, err
		},
	}
	wc, resp, err := d.DialContext(ctx, url, hdr)
	if stop != nil {
		stop()
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, dialError(err, resp, ctx)
	}
	if ctx.Err() != nil {
		// The deadline cut the socket just as the upgrade finished.
		wc.NetConn().Close()
		return nil, dialError(ctx.Err(), nil, ctx)
	}
	wc.NetConn().SetDeadline(time.Time{})
	c := &Conn{ws: wc, o: o, h: h, done: make(chan struct{}), slot: -1}
	c.Timing = Timing{TCP: tcp, Upgrade: time.Since(start)}
	now := clock()
	c.lastRead.Store(now)
	c.lastWrite.Store(now)
	wc.SetReadLimit(o.readLimit())
	wc.SetPingHandler(c.onPing)
	wc.SetPongHandler(c.onPong)
	if hs != nil {
		left := hs.finish()
		if sc, ok := hs.Conn.(syscall.Conn); ok {
			if reg, err := readiness.Register(sc, (*evConn)(c), false); err == nil {
				c.reg = reg
				hs.buf = nil
				if len(left) > 0 {
					c.ev = evPool.Get().(*evState)
					c.ev.in = append(c.ev.in, left...)
				}
			}
		}
	}
	if o.KeepAlive > 0 || o.IdleTimeout > 0 {
		sweep.schedule(c, now+int64(c.nextTick(now)))
	}
	switch {
	case c.reg == nil:
		go c.readLoop()
	case c.ev != nil:
		// Bytes came with the 101 answer: the socket may show no more.
		go c.ready()
	default:
		if err := c.reg.Rearm(); err != nil {
			c.end(&Disconnect{Reason: NetworkReset, Class: sample.Other, Text: err.Error(), Err: err}, false)
		}
	}
	return c, nil
}

func (c *Conn) onPing(data string) error {
	c.lastRead.Store(clock())
	err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.o.writeTimeout()))
	if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	}
	return nil
}

func (c *Conn) onPong(string) error {
	c.lastRead.Store(clock())
	return nil
}

// Subprotocol is the subprotocol the server chose.
func (c *Conn) Subprotocol() string { return c.ws.Subprotocol() }

// Done is closed when the connection has ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Disconnect says why the connection ended; nil while it is open.
func (c *Conn) Disconnect() *Disconnect {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.disc
}

// buffers for incoming messages are lent per message, so idle connections
// hold none.
var readPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled keeps one huge message from pinning a huge buffer in the pool.
const maxPooled = 64 << 10

// readLoop reads one message and hands it on; see handle for why each
// message gets a fresh goroutine. Its frame is kept tiny (the work is in
// functions that are not inlined into it) because this is the frame that
// sits parked in the netpoller on every idle connection read this way
// (TLS; evread.go reads the others without one).
func (c *Conn) readLoop() {
	typ, r, err := c.ws.NextReader()
	if err != nil {
		c.readEnded(err)
		return
	}
	if c.handle(typ, r) {
		// Handling a message (JSON decoding above all) grows this
		// goroutine's stack to 4-8 KB, and the GC only halves a stack
		// whose use is under a quarter, so a reader parked again here
		// would keep 4 KB for good. A fresh goroutine parks in 2 KB; one
		// spawn per message is cheap next to the decoding.
		go c.readLoop()
	}
}

// handle reads and dispatches one message; false means the connection
// ended.
//
//go:noinline
func (c *Conn) handle(typ int, r io.Reader) bool {
	buf := readPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBuf(buf)
	if _, err := buf.ReadFrom(r); err != nil {
		c.readEnded(err)
		return false
	}
	return c.deliver(typ, buf.Bytes())
}

// deliver counts and hands on one message; false means the connection
// ended. data is only valid during the call.
func (c *Conn) deliver(typ int, data []byte) bool {
	c.lastRead.Store(clock())
	// Counting a message and delivering it are one unit, so a count read
	// after Close or Abort returns agrees with what handlers saw: the
	// reader marks itself busy, then skips a connection already ended
	// (counting nothing), and Close and Abort wait for busy to clear
	// (settle). Without this, a Close that gave up on the close handshake
	// (the close frame stuck behind a flood) ended the connection between
	// the MsgsIn add and the handler, and a push counted in MsgsIn was
	// missing from the handler's counts. Both sides are sequentially
	// consistent atomics, so either the reader sees ended or settle sees
	// busy.
	c.busy.Add(1)
	defer c.busy.Add(-1)
	if c.ended.Load() {
		return false
	}
	if ct := c.o.Counters; ct != nil {
		ct.MsgsIn.Add(1)
		ct.BytesIn.Add(int64(len(data)))
	}
	if c.nwait.Load() > 0 || c.o.Backlog > 0 {
		c.offer(data)
	}
	if c.h != nil {
		if herr := c.h.Message(c, MessageType(typ), data); herr != nil {
			var d *Disconnect
			if !errors.As(herr, &d) {
				d = &Disconnect{Reason: ProtocolError, Class: sample.Other, Text: herr.Error(), Err: herr}
			}
			c.end(d, true)
			return false
		}
	}
	return true
}

// settle waits for a message being counted and delivered to be done (see
// handle); the connection has ended, so no other will start. The wait is
// bounded by CloseTimeout: were a handler to call Close or Abort on its own
// connection, it would wait on itself.
func (c *Conn) settle() {
	if c.busy.Load() == 0 {
		return
	}
	deadline := time.Now().Add(c.o.closeTimeout())
	for c.busy.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		readPool.Put(b)
	}
}

//go:noinline
func (c *Conn) readEnded(err error) {
	if c.closing.Load() {
		// We asked for the close; the peer's answer (or our own cut after
		// CloseTimeout) is the normal end.
		c.end(&Disconnect{Reason: ClientClose, Class: sample.OK}, false)
		return
	}
	c.end(readDisconnect(err, c.o.readLimit()), false)
}

// end records the first reason the connection ended and tears it down.
// polite sends a close frame first, for ends the peer did not start.
func (c *Conn) end(d *Disconnect, polite bool) {
	if !c.ended.CompareAndSwap(false, true) {
		return
	}
	if c.o.KeepAlive > 0 || c.o.IdleTimeout > 0 {
		sweep.remove(c)
	}
	if c.h != nil {
		if d2 := c.h.Closed(c, d); d2 != nil {
			d = d2
		}
	}
	if polite {
		code := websocket.CloseNormalClosure
		if d.Reason == ProtocolError {
			code = websocket.CloseProtocolError
		}
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(100*time.Millisecond))
	}
	if c.reg != nil {
		// Out of the epoll set before the descriptor can go to another
		// socket.
		c.reg.Unregister()
	}
	c.ws.NetConn().Close()
	c.mu.Lock()
	c.disc = d
	ws := c.waiters
	c.waiters = nil
	c.backlog = nil
	c.mu.Unlock()
	for _, w := range ws {
		close(w.ch)
	}
	close(c.done)
}

// Send writes one message.
func (c *Conn) Send(typ MessageType, data []byte) error {
	if c.ended.Load() {
		return c.endedError("write")
	}
	c.wmu.Lock()
	c.ws.SetWriteDeadline(time.Now().Add(c.o.writeTimeout()))
	err := c.ws.WriteMessage(int(typ), data)
	c.wmu.Unlock()
	if err != nil {
		if c.ended.Load() {
			return c.endedError("write")
		}
		if c.closing.Load() {
			// Close sent the close frame, so gorilla refuses writes; the
			// connection ends as Close decides (client_close), not as a
			// failed write.
			return &Error{Op: "write", Class: sample.Other, Msg: "connection is closing", Err: err}
		}
		cl := Classify(err)
		if cl == sample.Other {
			cl = sample.ConnReset
		}
		c.end(&Disconnect{Reason: WriteFailed, Class: cl, Text: err.Error(), Err: err}, false)
		return &Error{Op: "write", Class: cl, Msg: err.Error(), Err: err}
	}
	c.lastWrite.Store(clock())
	if ct := c.o.Counters; ct != nil {
		ct.MsgsOut.Add(1)
		ct.BytesOut.Add(int64(len(data)))
	}
	return nil
}

func (c *Conn) endedError(op string) error {
	d := c.Disconnect()
	if d == nil {
		<-c.done
		d = c.Disconnect()
	}
	return &Error{Op: op, Class: d.Class, Msg: "connection ended: " + d.Error(), Err: d}
}

// Close sends a close frame with code and reason, waits up to CloseTimeout
// for the peer's, then drops the socket.
func (c *Conn) Close(code int, reason string) error {
	if c.ended.Load() || !c.closing.CompareAndSwap(false, true) {
		<-c.done
		c.settle()
		return nil
	}
	err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(c.o.closeTimeout()))
	if err == nil {
		t := time.NewTimer(c.o.closeTimeout())
		select {
		case <-c.done:
		case <-t.C:
		}
		t.Stop()
	}
	c.end(&Disconnect{Reason: ClientClose, Class: sample.OK}, false)
	<-c.done
	c.settle()
	return nil
}

// Abort drops the connection without a close handshake (end of run).
func (c *Conn) Abort() {
	c.closing.Store(true)
	c.end(&Disconnect{Reason: ClientClose, Class: sample.OK}, false)
	c.settle()
}

// Fail ends the connection with a reason a protocol layer decided on.
func (c *Conn) Fail(d *Disconnect) { c.end(d, true) }

// nextTick is how long until there is something to check.
func (c *Conn) nextTick(now int64) time.Duration {
	next := int64(1<<62 - 1)
	// No keep-alive is sent while closing (tick skips it), so none is
	// waited for: an overdue one would wake the check at the floor below
	// for the whole close wait.
	if ka := c.o.KeepAlive; ka > 0 && !c.closing.Load() {
		next = min(next, c.lastWrite.Load()+int64(ka))
	}
	if it := c.o.IdleTimeout; it > 0 {
		next = min(next, c.lastRead.Load()+int64(it))
	}
	return max(time.Duration(next-now), 5*time.Millisecond)
}

// tick runs on a goroutine of its own when the connection is due
// (sweep.go): it fires rarely and holds no goroutine between fires, which
// is what makes 18,000 idle connections cheap.
func (c *Conn) tick() {
	if c.ended.Load() {
		return
	}
	now := clock()
	if it := c.o.IdleTimeout; it > 0 && now-c.lastRead.Load() >= int64(it) {
		c.end(&Disconnect{Reason: PingTimeout, Class: sample.Timeout,
			Text: "server sent nothing for " + it.String()}, true)
		return
	}
	if ka := c.o.KeepAlive; ka > 0 && now-c.lastWrite.Load() >= int64(ka) && !c.closing.Load() {
		var err error
		if c.o.KeepAliveMessage != nil {
			typ := c.o.KeepAliveType
			if typ == 0 {
				typ = Text
			}
			err = c.Send(typ, c.o.KeepAliveMessage)
		} else {
			err = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.o.writeTimeout()))
			if err == nil {
				c.lastWrite.Store(clock())
			}
		}
		if err != nil {
			if !c.ended.Load() && !c.closing.Load() {
				c.end(&Disconnect{Reason: WriteFailed, Class: sample.ConnReset, Text: err.Error(), Err: err}, false)
			}
			return
		}
	}
	if !c.ended.Load() {
		now := clock()
		sweep.schedule(c, now+int64(c.nextTick(now)))
	}
}
