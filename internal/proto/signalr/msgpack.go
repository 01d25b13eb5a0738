package signalr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The MessagePack hub protocol (HubProtocol.md, "MessagePack (MsgPack)
// encoding"): each message is a MessagePack array behind a varint length
// prefix (7 bits a byte, low bits first, at most 5 bytes, at most 2^31-1).
// The handshake stays JSON with its 0x1E separator.

// maxVarint is the longest length prefix the spec allows.
const maxVarint = 5

var (
	errBadLength = errors.New("bad MessagePack length prefix: more than 5 bytes or over 2^31-1")
	errEmptyMsg  = errors.New("empty MessagePack message")
)

// frameTooLong is a length prefix over the limit: refused before its bytes
// arrive, so a hostile server cannot make us buffer them.
type frameTooLong struct{ n, max int64 }

func (e *frameTooLong) Error() string {
	return fmt.Sprintf("MessagePack message of %d bytes declared, over the limit of %d", e.n, e.max)
}

// SplitFrames cuts data into length-prefixed MessagePack messages. rest is
// an incomplete message (prefix included) at the end, or empty. A prefix
// that cannot be valid, or one declaring more than max bytes, is an error.
func SplitFrames(data []byte, max int64, fn func(msg []byte) error) (rest []byte, err error) {
	for len(data) > 0 {
		var n uint64
		i := 0
		for {
			if i == len(data) {
				return data, nil // the prefix itself is cut
			}
			b := data[i]
			n |= uint64(b&0x7f) << (7 * i)
			i++
			if b&0x80 == 0 {
				break
			}
			if i == maxVarint {
				// A fifth byte that promises a sixth: wrong now, so
				// waiting for more data would only hide it.
				return data, errBadLength
			}
		}
		if n > math.MaxInt32 {
			return data, errBadLength
		}
		if int64(n) > max {
			return data, &frameTooLong{n: int64(n), max: max}
		}
		if uint64(len(data)-i) < n {
			return data, nil
		}
		if err := fn(data[i : i+int(n)]); err != nil {
			return data[i+int(n):], err
		}
		data = data[i+int(n):]
	}
	return data, nil
}

// appendFrame adds the varint length prefix to body, which must start
// maxVarint bytes into b (see frameStart); it returns the framed message.
func appendFrame(b []byte) []byte {
	n := len(b) - maxVarint
	var pre [maxVarint]byte
	k := 0
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n > 0 {
			c |= 0x80
		}
		pre[k] = c
		k++
		if n == 0 {
			break
		}
	}
	copy(b[maxVarint-k:], pre[:k])
	return b[maxVarint-k:]
}

// mpReader decodes one message in place: payloads are sub-slices of the
// message, located by how much of the reader the decoder consumed (a
// bytes.Reader is a ByteScanner, so the decoder reads it unbuffered).
type mpReader struct {
	b []byte
	r bytes.Reader
	d *msgpack.Decoder
}

func newMPReader(b []byte) *mpReader {
	m := &mpReader{b: b}
	m.r.Reset(b)
	m.d = msgpack.NewDecoder(&m.r)
	return m
}

func (m *mpReader) pos() int { return len(m.b) - m.r.Len() }

// raw skips one value and returns its bytes.
func (m *mpReader) raw() ([]byte, error) {
	start := m.pos()
	n, err := mpSize(m.b[start:], 0)
	if err != nil {
		return nil, err
	}
	_, _ = m.r.Seek(int64(start+n), io.SeekStart)
	return m.b[start : start+n : start+n], nil
}

// whole checks that the next value lies within the message before the
// library decodes it: a string or binary declaring 2 GB in a 20-byte
// message would otherwise cost a large allocation before failing.
func (m *mpReader) whole() error {
	_, err := mpSize(m.b[m.pos():], 0)
	return err
}

var errTruncated = errors.New("MessagePack value cut short")

// mpSize is the encoded size of the value at the start of b, walked
// without decoding or allocating; nesting deeper than maxDepth is refused.
func mpSize(b []byte, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errors.New("nested too deep")
	}
	if len(b) == 0 {
		return 0, errTruncated
	}
	w := mpWalk{b: b, depth: depth}
	c := b[0]
	switch {
	case msgpcode.IsFixedNum(c), c == msgpcode.Nil, c == msgpcode.False, c == msgpcode.True:
		return 1, nil
	case msgpcode.IsFixedString(c):
		return w.fixed(1 + int(c&msgpcode.FixedStrMask))
	case msgpcode.IsFixedArray(c):
		return w.items(1, int(c&msgpcode.FixedArrayMask))
	case msgpcode.IsFixedMap(c):
		return w.items(1, 2*int(c&msgpcode.FixedMapMask))
	}
	if n := mpFixedSize(c); n > 0 {
		return w.fixed(n)
	}
	switch c {
	case msgpcode.Str8, msgpcode.Bin8:
		return w.payload(1, 0)
	case msgpcode.Str16, msgpcode.Bin16:
		return w.payload(2, 0)
	case msgpcode.Str32, msgpcode.Bin32:
		return w.payload(4, 0)
	case msgpcode.Ext8:
		return w.payload(1, 1)
	case msgpcode.Ext16:
		return w.payload(2, 1)
	case msgpcode.Ext32:
		return w.payload(4, 1)
	case msgpcode.Array16, msgpcode.Array32, msgpcode.Map16, msgpcode.Map32:
		return w.container(c)
	}
	return 0, fmt.Errorf("unknown MessagePack code 0x%02x", c)
}

// mpFixedSize is the whole encoded size of a value whose code alone
// fixes it (numbers, fixed extensions); 0 for the others.
func mpFixedSize(c byte) int {
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		return 2
	case msgpcode.Uint16, msgpcode.Int16:
		return 3
	case msgpcode.Uint32, msgpcode.Int32, msgpcode.Float:
		return 5
	case msgpcode.Uint64, msgpcode.Int64, msgpcode.Double:
		return 9
	case msgpcode.FixExt1:
		return 3
	case msgpcode.FixExt2:
		return 4
	case msgpcode.FixExt4:
		return 6
	case msgpcode.FixExt8:
		return 10
	case msgpcode.FixExt16:
		return 18
	}
	return 0
}

// mpWalk is mpSize's view of the value at the start of b.
type mpWalk struct {
	b     []byte
	depth int
}

// be reads a big-endian length of k bytes after the code.
func (w mpWalk) be(k int) (int, bool) {
	if len(w.b) < 1+k {
		return 0, false
	}
	n := 0
	for _, x := range w.b[1 : 1+k] {
		n = n<<8 | int(x)
	}
	return n, true
}

// fixed is a value of n bytes in all.
func (w mpWalk) fixed(n int) (int, error) {
	if len(w.b) < n {
		return 0, errTruncated
	}
	return n, nil
}

// payload is a value whose length, k bytes after the code, counts the
// bytes after extra more header bytes.
func (w mpWalk) payload(k int, extra int) (int, error) {
	n, ok := w.be(k)
	if !ok || n < 0 || len(w.b)-1-k-extra < n {
		return 0, errTruncated
	}
	return 1 + k + extra + n, nil
}

// items is a header of hdr bytes followed by count values.
func (w mpWalk) items(hdr, count int) (int, error) {
	at := hdr
	if at > len(w.b) {
		return 0, errTruncated
	}
	for i := 0; i < count; i++ {
		n, err := mpSize(w.b[at:], w.depth+1)
		if err != nil {
			return 0, err
		}
		at += n
	}
	return at, nil
}

// container is an array or map with a 16- or 32-bit count.
func (w mpWalk) container(c byte) (int, error) {
	k := 2
	if c == msgpcode.Array32 || c == msgpcode.Map32 {
		k = 4
	}
	n, ok := w.be(k)
	if !ok {
		return 0, errTruncated
	}
	if c == msgpcode.Map16 || c == msgpcode.Map32 {
		n *= 2
	}
	// Every element takes at least a byte: a count beyond what is left
	// is cut short, whatever the elements.
	if n > len(w.b) {
		return 0, errTruncated
	}
	return w.items(1+k, n)
}

// str reads a string or nil (as "").
func (m *mpReader) str() (string, error) {
	c, err := m.d.PeekCode()
	if err != nil {
		return "", err
	}
	if c == msgpcode.Nil {
		return "", m.d.DecodeNil()
	}
	if !msgpcode.IsString(c) {
		return "", fmt.Errorf("expected a string, found code 0x%02x", c)
	}
	if err := m.whole(); err != nil {
		return "", err
	}
	return m.d.DecodeString()
}

// headers checks the headers map (string keys, string values, as the
// .NET client reads them) and skips it: nothing here reads headers.
func (m *mpReader) headers() error {
	c, err := m.d.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		return m.d.DecodeNil()
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return violation("Reading map length for 'headers' failed.")
	}
	n, err := m.d.DecodeMapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := m.str(); err != nil {
			return violation(fmt.Sprintf("Reading 'headers[%d].Key' as String failed.", i))
		}
		if _, err := m.str(); err != nil {
			return violation(fmt.Sprintf("Reading 'headers[%d].Value' as String failed.", i))
		}
	}
	return nil
}

// ParseMsgPack decodes one MessagePack hub message (without its length
// prefix). Payloads (arguments, item, result) stay raw MessagePack,
// sub-slices of b.
func ParseMsgPack(b []byte) (Message, error) {
	m, err := parseMsgPack(b)
	if err != nil {
		return m, fmt.Errorf("bad MessagePack hub message %s: %w", hexSnippet(b), err)
	}
	return m, nil
}

func parseMsgPack(b []byte) (Message, error) {
	var m Message
	if len(b) == 0 {
		return m, errEmptyMsg
	}
	r := newMPReader(b)
	// The message must hold what it declares (checked without decoding),
	// so nothing below allocates by a hostile length.
	if err := r.whole(); err != nil {
		return m, err
	}
	n, err := r.d.DecodeArrayLen()
	if err != nil {
		return m, err
	}
	if n < 1 {
		return m, errNoType
	}
	typ, err := r.d.DecodeInt64()
	if err != nil {
		return m, fmt.Errorf("message type: %v", err)
	}
	if typ <= 0 || typ > math.MaxInt32 {
		return m, fmt.Errorf("message type %d", typ)
	}
	m.Type = int(typ)
	p := mpMessage{r: r, n: n, m: &m}
	switch m.Type {
	case TypeInvocation, TypeStreamInvocation:
		err = p.invocation()
	case TypeStreamItem:
		err = p.streamItem()
	case TypeCompletion:
		err = p.completion()
	case TypeCancelInvocation:
		err = p.idAfterHeaders(3)
	case TypeClose:
		err = p.close()
	case TypeAck, TypeSequence:
		err = p.sequence()
	}
	return m, err
}

// mpMessage is one hub message being decoded: the reader after its type,
// the array's length, and the message filled in.
type mpMessage struct {
	r *mpReader
	n int
	m *Message
}

// need checks the array holds at least k elements.
func (p mpMessage) need(k int) error {
	if p.n < k {
		return fmt.Errorf("type %d message with %d elements, expected at least %d", p.m.Type, p.n, k)
	}
	return nil
}

// idAfterHeaders reads the headers and invocationId that follow the type
// in a message of at least k elements.
func (p mpMessage) idAfterHeaders(k int) error {
	if err := p.need(k); err != nil {
		return err
	}
	if err := p.r.headers(); err != nil {
		return err
	}
	var err error
	if p.m.InvocationID, err = p.r.str(); err != nil {
		return violation("Reading 'invocationId' as String failed.")
	}
	if p.m.InvocationID == "" && p.m.Type != TypeInvocation {
		// Only a fire-and-forget Invocation goes without an id (nil or
		// "", which both clients read as none); every other type names
		// the invocation it belongs to.
		return violation("Missing required property 'invocationId'.")
	}
	return nil
}

// invocation: [type, headers, invocationId, target, arguments, streamIds?]
func (p mpMessage) invocation() error {
	if err := p.idAfterHeaders(5); err != nil {
		return err
	}
	var err error
	if p.m.Target, err = p.r.str(); err != nil || p.m.Target == "" {
		return violation("Reading 'target' as String failed.")
	}
	c, err := p.r.d.PeekCode()
	if err != nil {
		return err
	}
	if !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32 {
		return fmt.Errorf("arguments: expected an array, found code 0x%02x", c)
	}
	if p.m.Arguments, err = p.r.raw(); err != nil {
		return fmt.Errorf("arguments: %v", err)
	}
	return nil
}

// streamItem: [2, headers, invocationId, item]
func (p mpMessage) streamItem() error {
	if err := p.idAfterHeaders(4); err != nil {
		return err
	}
	var err error
	if p.m.Item, err = p.r.raw(); err != nil {
		return fmt.Errorf("item: %v", err)
	}
	return nil
}

// completion: [3, headers, invocationId, resultKind, error | result]
func (p mpMessage) completion() error {
	if err := p.idAfterHeaders(4); err != nil {
		return err
	}
	kind, err := p.r.d.DecodeInt64()
	if err != nil {
		return fmt.Errorf("resultKind: %v", err)
	}
	switch kind {
	case 1:
		if err := p.need(5); err != nil {
			return err
		}
		// An empty error stays empty: no error, as both official
		// clients read it (and as JSON "error": "" reads).
		if p.m.Error, err = p.r.str(); err != nil {
			return violation("Reading 'error' as String failed.")
		}
	case 2:
	case 3:
		if err := p.need(5); err != nil {
			return err
		}
		if p.m.Result, err = p.r.raw(); err != nil {
			return fmt.Errorf("result: %v", err)
		}
	default:
		return fmt.Errorf("resultKind %d", kind)
	}
	return nil
}

// close: [7, error, allowReconnect?]. Some servers (philippseith/signalr
// 0.11) put a headers map first; take it as such.
func (p mpMessage) close() error {
	if err := p.need(2); err != nil {
		return err
	}
	r := p.r
	k := 2
	if c, err := r.d.PeekCode(); err == nil && (msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32) {
		if _, err := r.raw(); err != nil {
			return err
		}
		k++
	}
	if r.r.Len() == 0 {
		return nil
	}
	var err error
	if p.m.Error, err = r.str(); err != nil {
		return fmt.Errorf("error: %v", err)
	}
	if p.n > k || r.r.Len() > 0 {
		if c, err := r.d.PeekCode(); err == nil && (c == msgpcode.True || c == msgpcode.False) {
			p.m.AllowReconnect, _ = r.d.DecodeBool()
		}
	}
	return nil
}

// sequence: [8 or 9, sequenceId]
func (p mpMessage) sequence() error {
	if err := p.need(2); err != nil {
		return err
	}
	// The decoder reads nil as 0; the .NET client refuses it.
	if c, err := p.r.d.PeekCode(); err != nil || c == msgpcode.Nil {
		return violation("Reading 'sequenceId' as Int64 failed.")
	}
	var err error
	if p.m.SequenceID, err = p.r.d.DecodeInt64(); err != nil {
		return violation("Reading 'sequenceId' as Int64 failed.")
	}
	return nil
}

func hexSnippet(b []byte) string {
	if len(b) > 32 {
		return fmt.Sprintf("%x…", b[:32])
	}
	return fmt.Sprintf("%x", b)
}
