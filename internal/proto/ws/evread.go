package ws

import (
	"bytes"
	"io"
	"net"
	"os"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/readiness"
	"github.com/stampede-load/stampede/internal/sample"
)

// The two ways bytes reach the frame codec (frames.go).
//
// On Linux, a plain (ws://) connection has no goroutine of its own: its
// socket sits in the process's epoll set (internal/readiness), and when
// bytes arrive a fresh goroutine reads everything the socket holds, hands
// it to the codec, and arms the socket again. An idle connection thus
// holds no stack at all, where a parked reader held 2 KB at least and
// often 4-8 KB once a message had grown it.
//
// TLS connections, and every connection elsewhere, keep a reading
// goroutine: a tls.Conn may hold decrypted bytes that the socket no
// longer shows, so the socket's readiness does not say whether a read
// would return.

// evConn is a Conn seen as a readiness handler, so that Ready is not a
// method of Conn's own.
type evConn Conn

func (e *evConn) Ready() { (*Conn)(e).ready() }

// ready handles what the socket holds, then asks for the next readiness.
// Only one runs at a time per connection (the registration is one-shot
// until Rearm), so c.ev needs no lock.
func (c *Conn) ready() {
	st := c.ev
	if st == nil {
		st = evPool.Get().(*evState)
		c.ev = st
	}
	for {
		if !c.frames(st) {
			c.dropEv()
			return
		}
		st.room()
		space := cap(st.in) - len(st.in)
		n, err := c.reg.Read(st.in[len(st.in):cap(st.in)])
		if err != nil {
			if err == readiness.ErrWouldBlock {
				break
			}
			c.readEnded(c.readError(err))
			c.dropEv()
			return
		}
		st.in = st.in[:len(st.in)+n]
		if n < space {
			// The socket is drained (a read that would block saves
			// nothing: arming again reports bytes that came since).
			if !c.frames(st) {
				c.dropEv()
				return
			}
			break
		}
	}
	if st.idle() {
		c.dropEv()
	}
	if err := c.reg.Rearm(); err != nil {
		c.end(&Disconnect{Reason: NetworkReset, Class: sample.Other, Text: err.Error(), Err: err}, false)
	}
}

// readLoop is the reading goroutine: it reads until the connection ends.
// Handling a message (JSON decoding above all) grows a goroutine's stack
// to 4-8 KB, and the GC only halves a stack whose use is under a quarter,
// so a reader parked again on the same goroutine would keep 4 KB for
// good: once everything read is handled, a fresh goroutine (2 KB) takes
// over the wait.
func (c *Conn) readLoop() {
	for c.readOnce() {
		if c.ev == nil {
			go c.readLoop()
			return
		}
	}
}

// readFirst is the reading goroutine's start: it handles the frames that
// came with the 101 answer before it waits for more, as the server may
// send nothing else until they are answered.
func (c *Conn) readFirst() {
	if st := c.ev; st != nil {
		if !c.frames(st) {
			c.dropEv()
			return
		}
		if st.idle() {
			c.dropEv()
		}
	}
	c.readLoop()
}

// readOnce waits for bytes and hands them to the codec; false means the
// connection ended. While no frame is partly in it reads into the
// connection's small buffer (the one buffer an idle connection keeps),
// else straight into the reading state.
func (c *Conn) readOnce() bool {
	st := c.ev
	var n int
	var err error
	if st == nil {
		n, err = c.src.Read(c.rbuf)
		if n > 0 {
			st = evPool.Get().(*evState)
			c.ev = st
			st.in = append(st.in, c.rbuf[:n]...)
		}
	} else {
		st.room()
		n, err = c.src.Read(st.in[len(st.in):cap(st.in)])
		st.in = st.in[:len(st.in)+n]
	}
	if st != nil && !c.frames(st) {
		c.dropEv()
		return false
	}
	if err != nil {
		c.readEnded(c.readError(err))
		c.dropEv()
		return false
	}
	if st != nil && st.idle() {
		c.dropEv()
	}
	return true
}

// readError is a read's failure as gorilla's reader would have returned
// it, whichever way the bytes were read.
func (c *Conn) readError(err error) error {
	switch err.(type) {
	case *os.SyscallError:
		// A readiness read, as net.Conn's Read would say it.
		nc := c.ws.NetConn()
		return &net.OpError{Op: "read", Net: "tcp", Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
	}
	if err == io.EOF {
		// gorilla's value for a stream that ends without a close frame.
		return &websocket.CloseError{Code: websocket.CloseAbnormalClosure, Text: io.ErrUnexpectedEOF.Error()}
	}
	return err
}

// hsConn is the socket under gorilla during the upgrade (a TLS
// connection's is the TLS session). It hands gorilla one byte per read,
// so that gorilla's buffer never holds bytes past the 101 answer (a
// server may send its first frame in the same packet); those stay here,
// and the frame reader starts with them. After the upgrade gorilla only
// writes through it: the reader reads the connection under it.
type hsConn struct {
	net.Conn
	buf  []byte
	off  int
	done bool
}

var hsPool = sync.Pool{New: func() any { b := make([]byte, 1024); return &b }}

func (h *hsConn) Read(p []byte) (int, error) {
	if h.done {
		return h.Conn.Read(p)
	}
	if h.off < len(h.buf) {
		if len(p) == 0 {
			return 0, nil
		}
		p[0] = h.buf[h.off]
		h.off++
		return 1, nil
	}
	if h.buf == nil {
		h.buf = (*hsPool.Get().(*[]byte))[:0]
	}
	n, err := h.Conn.Read(h.buf[:cap(h.buf)])
	h.buf, h.off = h.buf[:n], 0
	if n == 0 || len(p) == 0 {
		return 0, err
	}
	p[0], h.off = h.buf[0], 1
	return 1, nil
}

// finish ends the upgrade: it returns the bytes read past the 101 answer
// (a copy, nil if none) and gives back the buffer.
func (h *hsConn) finish() []byte {
	var left []byte
	if h.off < len(h.buf) {
		left = bytes.Clone(h.buf[h.off:])
	}
	if h.buf != nil {
		b := h.buf[:cap(h.buf)]
		hsPool.Put(&b)
	}
	h.buf, h.off, h.done = nil, 0, true
	return left
}
