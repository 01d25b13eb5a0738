package ws

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/readiness"
	"github.com/stampede-load/stampede/internal/sample"
)

// Reads driven by readiness. On Linux, a plain (ws://) connection has no
// goroutine of its own: its socket sits in the process's epoll set
// (internal/readiness), and when bytes arrive a fresh goroutine reads
// everything the socket holds, handles every whole frame, keeps a partial
// one for later, and arms the socket again. An idle connection thus holds
// no stack at all, where a parked reader held 2 KB at least and often 4-8
// KB once a message had grown it.
//
// gorilla cannot read this way (its NextReader blocks, and a ping alone
// would park it until the next data message), so these connections parse
// frames here, with gorilla's checks and its error values, so that every
// end is classified as before (errors.go); gorilla still writes. TLS
// connections keep the reading goroutine: a tls.Conn may hold decrypted
// bytes that the socket no longer shows, so the socket's readiness does
// not say whether a read would return.

// evConn is a Conn seen as a readiness handler, so that Ready is not a
// method of Conn's own.
type evConn Conn

func (e *evConn) Ready() { (*Conn)(e).ready() }

// evState is a connection's reading state between two readinesses. It is
// lent only while a frame or a message is partly in: an idle connection
// holds none.
type evState struct {
	in   []byte // bytes read; in[:off] handled
	off  int
	need int // length of the frame at off, once known, when it is not all in
	// A message in several frames: its type, the payload so far (msg,
	// when not delivered straight from in) and its length.
	inMsg  bool
	typ    int
	msg    *bytes.Buffer
	length int64
}

const evChunk = 4 << 10

var evPool = sync.Pool{New: func() any { return &evState{in: make([]byte, 0, evChunk)} }}

func (c *Conn) dropEv() {
	st := c.ev
	if st == nil {
		return
	}
	c.ev = nil
	if st.msg != nil {
		putBuf(st.msg)
	}
	if cap(st.in) > maxPooled {
		st.in = make([]byte, 0, evChunk)
	}
	*st = evState{in: st.in[:0]}
	evPool.Put(st)
}

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
			var se *os.SyscallError
			if err == io.EOF {
				// gorilla's value for a stream that ends without a close frame.
				err = &websocket.CloseError{Code: websocket.CloseAbnormalClosure, Text: io.ErrUnexpectedEOF.Error()}
			} else if errors.As(err, &se) {
				// As net.Conn's Read would say it.
				nc := c.ws.NetConn()
				err = &net.OpError{Op: "read", Net: "tcp", Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: err}
			}
			c.readEnded(err)
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
	if st.off == len(st.in) && !st.inMsg {
		c.dropEv()
	}
	if err := c.reg.Rearm(); err != nil {
		c.end(&Disconnect{Reason: NetworkReset, Class: sample.Other, Text: err.Error(), Err: err}, false)
	}
}

// room makes space for the next read: at least a byte, and when the
// buffer is full, twice as much (no more than the frame at off needs).
func (st *evState) room() {
	if st.off == len(st.in) {
		st.in, st.off = st.in[:0], 0
	}
	pending := len(st.in) - st.off
	if st.off > 0 && (cap(st.in)-len(st.in) < 512 || st.need > cap(st.in)-st.off) {
		copy(st.in, st.in[st.off:])
		st.in, st.off = st.in[:pending], 0
	}
	if len(st.in) == cap(st.in) {
		// Grow with the bytes that came, never by what a header announces:
		// a hostile server announcing 1 MiB frames and sending 3 bytes of
		// each would otherwise make every connection reserve its limit.
		c := max(2*cap(st.in), evChunk)
		if st.need > pending && st.need < c {
			c = st.need
		}
		in := make([]byte, pending, c)
		copy(in, st.in[st.off:])
		st.in, st.off = in, 0
	}
}

// frames handles every whole frame in st, as gorilla's advanceFrame and
// message reader would; false means the connection ended.
func (c *Conn) frames(st *evState) bool {
	for {
		st.need = 0
		p := st.in[st.off:]
		if len(p) < 2 {
			return true
		}
		op := int(p[0] & 0x0f)
		final := p[0]&0x80 != 0
		length := int64(p[1] & 0x7f)
		var errs []string
		if p[0]&0x40 != 0 {
			errs = append(errs, "RSV1 set")
		}
		if p[0]&0x20 != 0 {
			errs = append(errs, "RSV2 set")
		}
		if p[0]&0x10 != 0 {
			errs = append(errs, "RSV3 set")
		}
		switch op {
		case websocket.CloseMessage, websocket.PingMessage, websocket.PongMessage:
			if length > 125 {
				errs = append(errs, "len > 125 for control")
			}
			if !final {
				errs = append(errs, "FIN not set on control")
			}
		case websocket.TextMessage, websocket.BinaryMessage:
			if st.inMsg {
				errs = append(errs, "data before FIN")
			}
		case 0:
			if !st.inMsg {
				errs = append(errs, "continuation after FIN")
			}
		default:
			errs = append(errs, "bad opcode "+strconv.Itoa(op))
		}
		if p[1]&0x80 != 0 {
			// A server's frames are never masked.
			errs = append(errs, "bad MASK")
		}
		if len(errs) > 0 {
			c.readEnded(c.protocolError(strings.Join(errs, ", ")))
			return false
		}
		hl := int64(2)
		switch length {
		case 126:
			if hl = 4; len(p) < 4 {
				return true
			}
			length = int64(binary.BigEndian.Uint16(p[2:]))
		case 127:
			if hl = 10; len(p) < 10 {
				return true
			}
			if length = int64(binary.BigEndian.Uint64(p[2:])); length < 0 {
				c.readEnded(websocket.ErrReadLimit)
				return false
			}
		}
		data := op == websocket.TextMessage || op == websocket.BinaryMessage || op == 0
		if data {
			if total := st.length + length; total < 0 || total > c.o.readLimit() {
				c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""), time.Now().Add(time.Second))
				c.readEnded(websocket.ErrReadLimit)
				return false
			}
		}
		if int64(len(p)) < hl+length {
			st.need = int(hl + length)
			return true
		}
		payload := p[hl : hl+length]
		st.off += int(hl + length)
		switch op {
		case websocket.PingMessage:
			if err := c.onPing(string(payload)); err != nil {
				c.readEnded(err)
				return false
			}
			continue
		case websocket.PongMessage:
			c.onPong("")
			continue
		case websocket.CloseMessage:
			code, text := websocket.CloseNoStatusReceived, ""
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload))
				if !validReceivedCloseCode(code) {
					c.readEnded(c.protocolError("bad close code " + strconv.Itoa(code)))
					return false
				}
				text = string(payload[2:])
				if !utf8.ValidString(text) {
					c.readEnded(c.protocolError("invalid utf8 payload in close frame"))
					return false
				}
			}
			c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
			c.readEnded(&websocket.CloseError{Code: code, Text: text})
			return false
		}
		if op != 0 {
			st.typ = op
		}
		st.inMsg = !final
		if final && st.msg == nil {
			// The usual case, a message in one frame: delivered from
			// where it was read.
			st.length = 0
			if !c.deliver(st.typ, payload) {
				return false
			}
			continue
		}
		if st.msg == nil {
			st.msg = readPool.Get().(*bytes.Buffer)
			st.msg.Reset()
		}
		st.msg.Write(payload)
		st.length += length
		if final {
			ok := c.deliver(st.typ, st.msg.Bytes())
			putBuf(st.msg)
			st.msg, st.length = nil, 0
			if !ok {
				return false
			}
		}
	}
}

// protocolError tells the peer, as gorilla does, and returns the error
// gorilla would.
func (c *Conn) protocolError(msg string) error {
	data := websocket.FormatCloseMessage(websocket.CloseProtocolError, msg)
	if len(data) > 125 {
		data = data[:125]
	}
	c.ws.WriteControl(websocket.CloseMessage, data, time.Now().Add(time.Second))
	return errors.New("websocket: " + msg)
}

func validReceivedCloseCode(code int) bool {
	switch code {
	case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseProtocolError,
		websocket.CloseUnsupportedData, websocket.CloseInvalidFramePayloadData, websocket.ClosePolicyViolation,
		websocket.CloseMessageTooBig, websocket.CloseMandatoryExtension, websocket.CloseInternalServerErr,
		websocket.CloseServiceRestart, websocket.CloseTryAgainLater:
		return true
	}
	return code >= 3000 && code <= 4999
}

// hsConn is the socket under gorilla during the upgrade of a connection
// that will be read on readiness. It hands gorilla one byte per read, so
// that gorilla's buffer never holds bytes past the 101 answer (a server
// may send its first frame in the same packet); those stay here, and the
// frame reader starts with them. After the upgrade gorilla only writes
// through it, or, where readiness could not be had, reads it as the plain
// socket (pass).
type hsConn struct {
	net.Conn
	buf  []byte
	off  int
	pass bool
}

var hsPool = sync.Pool{New: func() any { b := make([]byte, 1024); return &b }}

func (h *hsConn) Read(p []byte) (int, error) {
	if h.off < len(h.buf) {
		n := 0
		if h.pass {
			n = copy(p, h.buf[h.off:])
		} else if len(p) > 0 {
			p[0], n = h.buf[h.off], 1
		}
		h.off += n
		return n, nil
	}
	if h.pass {
		return h.Conn.Read(p)
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
// (a copy, nil if none), keeps them to be read again in pass mode, and
// gives back the buffer.
func (h *hsConn) finish() []byte {
	var left []byte
	if h.off < len(h.buf) {
		left = bytes.Clone(h.buf[h.off:])
	}
	if h.buf != nil {
		b := h.buf[:cap(h.buf)]
		hsPool.Put(&b)
	}
	h.buf, h.off, h.pass = left, 0, true
	return left
}
