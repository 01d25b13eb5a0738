// Package ws holds WebSocket connections for load tests: many of them, mostly
// idle. gorilla/websocket dials and writes; every connection, ws:// or
// wss://, is read by this package's one frame codec (frames.go), which
// classifies every end as gorilla's reader did. On Linux a plain (ws://)
// connection is read when its socket becomes readable and holds no
// goroutine while idle; TLS connections, and every connection elsewhere,
// keep one reading goroutine (evread.go). Write buffers come from a shared
// pool only while a message is written, and keep-alive and silence
// detection of every connection share one timer in the process
// (sweep.go). With coder/websocket an idle connection cost about 15 KB
// (two 4 KB bufio buffers it keeps for life, plus the net/http upgrade
// reader); with a parked read goroutine, about 2.2 KB of heap and a 2-8 KB
// stack; now about 1.8 KB of heap and stack together (TestIdleConnMemory).
package ws

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/readiness"
	"github.com/stampede-load/stampede/internal/sample"
)

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
	// goroutine reads. ev is the reading state between two reads while a
	// frame or message is partly in (frames.go). A reading goroutine
	// reads src, into rbuf while no frame is partly in.
	reg  *readiness.Reg
	ev   *evState
	src  net.Conn
	rbuf []byte

	Timing Timing
}

var base = time.Now()

// clock is monotonic nanoseconds; one int64 per timestamp keeps idle
// connections small.
func clock() int64 { return int64(time.Since(base)) }

// writePool lends write buffers only while a message is being written.
var writePool = &sync.Pool{}

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
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(100*time.Millisecond))
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
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.o.writeTimeout()))
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
