package ws

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// The frame codec of every connection, ws:// and wss://, read on
// readiness or by a goroutine: it takes the bytes read so far, handles
// every whole frame and keeps a partial one for the next read. It checks
// what gorilla's reader checks and ends a connection with gorilla's error
// values, so that every end is classified as gorilla's reader classified
// it (errors.go); gorilla still writes. gorilla's own reader cannot serve:
// its NextReader blocks, and a ping alone would park it until the next
// data message.

// evState is a connection's reading state between two reads. It is lent
// only while a frame or a message is partly in: an idle connection holds
// none.
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

// buffers for messages in several frames are lent per message, so idle
// connections hold none.
var readPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled keeps one huge message from pinning a huge buffer in the pool.
const maxPooled = 64 << 10

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		readPool.Put(b)
	}
}

// dropEv gives the reading state back once nothing is partly in.
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

// idle says nothing is partly in: the state can go back to the pool.
func (st *evState) idle() bool { return st.off == len(st.in) && !st.inMsg }

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
		op, final := int(p[0]&0x0f), p[0]&0x80 != 0
		if bad := headerProblems(p, st.inMsg); bad != "" {
			c.readEnded(c.protocolError(bad))
			return false
		}
		hl, length, whole := frameLength(p)
		if !whole {
			return true
		}
		if length < 0 {
			c.readEnded(websocket.ErrReadLimit)
			return false
		}
		isData := op == websocket.TextMessage || op == websocket.BinaryMessage || op == 0
		if total := st.length + length; isData && (total < 0 || total > c.o.readLimit()) {
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""), time.Now().Add(time.Second))
			c.readEnded(websocket.ErrReadLimit)
			return false
		}
		if int64(len(p)) < hl+length {
			st.need = int(hl + length)
			return true
		}
		payload := p[hl : hl+length]
		st.off += int(hl + length)
		var ok bool
		if isData {
			ok = c.dataFrame(st, op, final, payload)
		} else {
			ok = c.controlFrame(op, payload)
		}
		if !ok {
			return false
		}
	}
}

// headerProblems is what is wrong with the frame header at p (two bytes
// at least), in gorilla's words and order; "" when nothing is.
func headerProblems(p []byte, inMsg bool) string {
	op := int(p[0] & 0x0f)
	final := p[0]&0x80 != 0
	length := p[1] & 0x7f
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
		if inMsg {
			errs = append(errs, "data before FIN")
		}
	case 0:
		if !inMsg {
			errs = append(errs, "continuation after FIN")
		}
	default:
		errs = append(errs, "bad opcode "+strconv.Itoa(op))
	}
	if p[1]&0x80 != 0 {
		// A server's frames are never masked.
		errs = append(errs, "bad MASK")
	}
	return strings.Join(errs, ", ")
}

// frameLength reads the header length hl and payload length of the frame
// at p; whole is false while the extended length is not all in. A 64-bit
// length with its top bit set comes back negative.
func frameLength(p []byte) (hl, length int64, whole bool) {
	length = int64(p[1] & 0x7f)
	switch length {
	case 126:
		if len(p) < 4 {
			return 4, 0, false
		}
		return 4, int64(binary.BigEndian.Uint16(p[2:])), true
	case 127:
		if len(p) < 10 {
			return 10, 0, false
		}
		return 10, int64(binary.BigEndian.Uint64(p[2:])), true
	}
	return 2, length, true
}

// controlFrame answers a ping, notes a pong, and ends the connection on a
// close frame (answering it); false means the connection ended.
func (c *Conn) controlFrame(op int, payload []byte) bool {
	switch op {
	case websocket.PingMessage:
		if err := c.onPing(string(payload)); err != nil {
			c.readEnded(err)
			return false
		}
		return true
	case websocket.PongMessage:
		_ = c.onPong("")
		return true
	}
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
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
	c.readEnded(&websocket.CloseError{Code: code, Text: text})
	return false
}

// dataFrame delivers a message that ends with this frame, or keeps the
// frame's payload for the rest of its message; false means the
// connection ended.
func (c *Conn) dataFrame(st *evState, op int, final bool, payload []byte) bool {
	if op != 0 {
		st.typ = op
	}
	st.inMsg = !final
	if final && st.msg == nil {
		// The usual case, a message in one frame: delivered from where it
		// was read.
		st.length = 0
		return c.deliver(st.typ, payload)
	}
	if st.msg == nil {
		st.msg = readPool.Get().(*bytes.Buffer)
		st.msg.Reset()
	}
	st.msg.Write(payload)
	st.length += int64(len(payload))
	if !final {
		return true
	}
	ok := c.deliver(st.typ, st.msg.Bytes())
	putBuf(st.msg)
	st.msg, st.length = nil, 0
	return ok
}

// protocolError tells the peer, as gorilla does, and returns the error
// gorilla would.
func (c *Conn) protocolError(msg string) error {
	data := websocket.FormatCloseMessage(websocket.CloseProtocolError, msg)
	if len(data) > 125 {
		data = data[:125]
	}
	_ = c.ws.WriteControl(websocket.CloseMessage, data, time.Now().Add(time.Second))
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
