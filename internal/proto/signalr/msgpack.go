package signalr

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"time"

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
			if i == maxVarint {
				return data, errBadLength
			}
			b := data[i]
			n |= uint64(b&0x7f) << (7 * i)
			i++
			if b&0x80 == 0 {
				break
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
	b  []byte
	r  bytes.Reader
	d  *msgpack.Decoder
	at int
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
	m.r.Seek(int64(start+n), io.SeekStart)
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
	c := b[0]
	// be reads a big-endian length of k bytes after the code.
	be := func(k int) (int, bool) {
		if len(b) < 1+k {
			return 0, false
		}
		n := 0
		for _, x := range b[1 : 1+k] {
			n = n<<8 | int(x)
		}
		return n, true
	}
	fixed := func(n int) (int, error) {
		if len(b) < n {
			return 0, errTruncated
		}
		return n, nil
	}
	payload := func(k int, extra int) (int, error) {
		n, ok := be(k)
		if !ok || n < 0 || len(b)-1-k-extra < n {
			return 0, errTruncated
		}
		return 1 + k + extra + n, nil
	}
	items := func(hdr, count int) (int, error) {
		at := hdr
		if at > len(b) {
			return 0, errTruncated
		}
		for i := 0; i < count; i++ {
			n, err := mpSize(b[at:], depth+1)
			if err != nil {
				return 0, err
			}
			at += n
		}
		return at, nil
	}
	switch {
	case msgpcode.IsFixedNum(c), c == msgpcode.Nil, c == msgpcode.False, c == msgpcode.True:
		return 1, nil
	case msgpcode.IsFixedString(c):
		return fixed(1 + int(c&msgpcode.FixedStrMask))
	case msgpcode.IsFixedArray(c):
		return items(1, int(c&msgpcode.FixedArrayMask))
	case msgpcode.IsFixedMap(c):
		return items(1, 2*int(c&msgpcode.FixedMapMask))
	}
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		return fixed(2)
	case msgpcode.Uint16, msgpcode.Int16:
		return fixed(3)
	case msgpcode.Uint32, msgpcode.Int32, msgpcode.Float:
		return fixed(5)
	case msgpcode.Uint64, msgpcode.Int64, msgpcode.Double:
		return fixed(9)
	case msgpcode.Str8, msgpcode.Bin8:
		return payload(1, 0)
	case msgpcode.Str16, msgpcode.Bin16:
		return payload(2, 0)
	case msgpcode.Str32, msgpcode.Bin32:
		return payload(4, 0)
	case msgpcode.FixExt1:
		return fixed(3)
	case msgpcode.FixExt2:
		return fixed(4)
	case msgpcode.FixExt4:
		return fixed(6)
	case msgpcode.FixExt8:
		return fixed(10)
	case msgpcode.FixExt16:
		return fixed(18)
	case msgpcode.Ext8:
		return payload(1, 1)
	case msgpcode.Ext16:
		return payload(2, 1)
	case msgpcode.Ext32:
		return payload(4, 1)
	case msgpcode.Array16, msgpcode.Array32, msgpcode.Map16, msgpcode.Map32:
		k := 2
		if c == msgpcode.Array32 || c == msgpcode.Map32 {
			k = 4
		}
		n, ok := be(k)
		if !ok {
			return 0, errTruncated
		}
		if c == msgpcode.Map16 || c == msgpcode.Map32 {
			n *= 2
		}
		// Every element takes at least a byte: a count beyond what is
		// left is cut short, whatever the elements.
		if n > len(b) {
			return 0, errTruncated
		}
		return items(1+k, n)
	}
	return 0, fmt.Errorf("unknown MessagePack code 0x%02x", c)
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

// headers skips the headers map (nothing here reads headers).
func (m *mpReader) headers() error {
	c, err := m.d.PeekCode()
	if err != nil {
		return err
	}
	if c != msgpcode.Nil && !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return fmt.Errorf("expected the headers map, found code 0x%02x", c)
	}
	_, err = m.raw()
	return err
}

// ParseMsgPack decodes one MessagePack hub message (without its length
// prefix). Payloads (arguments, item, result) stay raw MessagePack,
// sub-slices of b.
func ParseMsgPack(b []byte) (Message, error) {
	m, err := parseMsgPack(b)
	if err != nil {
		return m, fmt.Errorf("bad MessagePack hub message %s: %v", hexSnippet(b), err)
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
	need := func(k int) error {
		if n < k {
			return fmt.Errorf("type %d message with %d elements, expected at least %d", typ, n, k)
		}
		return nil
	}
	switch m.Type {
	case TypeInvocation, TypeStreamInvocation:
		// [type, headers, invocationId, target, arguments, streamIds?]
		if err := need(5); err != nil {
			return m, err
		}
		if err := r.headers(); err != nil {
			return m, err
		}
		if m.InvocationID, err = r.str(); err != nil {
			return m, fmt.Errorf("invocationId: %v", err)
		}
		if m.Target, err = r.str(); err != nil {
			return m, fmt.Errorf("target: %v", err)
		}
		c, err := r.d.PeekCode()
		if err != nil {
			return m, err
		}
		if !msgpcode.IsFixedArray(c) && c != msgpcode.Array16 && c != msgpcode.Array32 {
			return m, fmt.Errorf("arguments: expected an array, found code 0x%02x", c)
		}
		if m.Arguments, err = r.raw(); err != nil {
			return m, fmt.Errorf("arguments: %v", err)
		}
	case TypeStreamItem:
		// [2, headers, invocationId, item]
		if err := need(4); err != nil {
			return m, err
		}
		if err := r.headers(); err != nil {
			return m, err
		}
		if m.InvocationID, err = r.str(); err != nil {
			return m, fmt.Errorf("invocationId: %v", err)
		}
		if m.Item, err = r.raw(); err != nil {
			return m, fmt.Errorf("item: %v", err)
		}
	case TypeCompletion:
		// [3, headers, invocationId, resultKind, error | result]
		if err := need(4); err != nil {
			return m, err
		}
		if err := r.headers(); err != nil {
			return m, err
		}
		if m.InvocationID, err = r.str(); err != nil {
			return m, fmt.Errorf("invocationId: %v", err)
		}
		kind, err := r.d.DecodeInt64()
		if err != nil {
			return m, fmt.Errorf("resultKind: %v", err)
		}
		switch kind {
		case 1:
			if err := need(5); err != nil {
				return m, err
			}
			if m.Error, err = r.str(); err != nil {
				return m, fmt.Errorf("error: %v", err)
			}
			if m.Error == "" {
				m.Error = "(empty error)"
			}
		case 2:
		case 3:
			if err := need(5); err != nil {
				return m, err
			}
			if m.Result, err = r.raw(); err != nil {
				return m, fmt.Errorf("result: %v", err)
			}
		default:
			return m, fmt.Errorf("resultKind %d", kind)
		}
	case TypeCancelInvocation:
		if err := need(3); err != nil {
			return m, err
		}
		if err := r.headers(); err != nil {
			return m, err
		}
		if m.InvocationID, err = r.str(); err != nil {
			return m, fmt.Errorf("invocationId: %v", err)
		}
	case TypeClose:
		// [7, error, allowReconnect?]. Some servers (philippseith/signalr
		// 0.11) put a headers map first; take it as such.
		if err := need(2); err != nil {
			return m, err
		}
		k := 2
		if c, err := r.d.PeekCode(); err == nil && (msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32) {
			if _, err := r.raw(); err != nil {
				return m, err
			}
			k++
		}
		if r.r.Len() == 0 {
			break
		}
		if m.Error, err = r.str(); err != nil {
			return m, fmt.Errorf("error: %v", err)
		}
		if n > k || r.r.Len() > 0 {
			if c, err := r.d.PeekCode(); err == nil && (c == msgpcode.True || c == msgpcode.False) {
				m.AllowReconnect, _ = r.d.DecodeBool()
			}
		}
	case TypeAck, TypeSequence:
		if err := need(2); err != nil {
			return m, err
		}
		if m.SequenceID, err = r.d.DecodeInt64(); err != nil {
			return m, fmt.Errorf("sequenceId: %v", err)
		}
	}
	return m, nil
}

func hexSnippet(b []byte) string {
	if len(b) > 32 {
		return fmt.Sprintf("%x…", b[:32])
	}
	return fmt.Sprintf("%x", b)
}

// msgpackHandshake asks for the MessagePack protocol; the handshake itself
// is JSON in every protocol.
var msgpackHandshake = []byte(`{"protocol":"messagepack","version":1}` + "\x1e")

var (
	msgpackPing  = appendFrame(append(make([]byte, maxVarint), 0x91, TypePing))
	msgpackClose = appendFrame(append(make([]byte, maxVarint), 0x93, TypeClose, msgpcode.Nil, msgpcode.False))
)

// frameStart is where a message body starts so appendFrame can prefix it
// without moving it.
func frameStart() []byte { return make([]byte, maxVarint, 64) }

type bytesWriter struct{ b *[]byte }

func (w bytesWriter) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// appendMsgPackInvocation encodes [type, {}, id|nil, target, args, []].
// A json.RawMessage argument (what plans render) is converted to the
// MessagePack value it denotes; anything else is encoded as msgpack
// encodes it, with JSON field names.
func appendMsgPackInvocation(typ int, id, target string, args []any) ([]byte, error) {
	b := frameStart()
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(bytesWriter{&b})
	e.SetCustomStructTag("json")
	e.UseCompactInts(true)
	e.EncodeArrayLen(6)
	e.EncodeInt(int64(typ))
	e.EncodeMapLen(0)
	if id == "" {
		e.EncodeNil()
	} else {
		e.EncodeString(id)
	}
	e.EncodeString(target)
	e.EncodeArrayLen(len(args))
	for _, a := range args {
		var err error
		switch v := a.(type) {
		case json.RawMessage:
			err = encodeJSONAsMsgPack(e, v)
		default:
			err = e.Encode(v)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := e.EncodeArrayLen(0); err != nil {
		return nil, err
	}
	return appendFrame(b), nil
}

// appendMsgPackSimple encodes a CancelInvocation, or a Completion carrying
// an error (the answer to a server's client-result invocation).
func appendMsgPackSimple(typ int, id, errText string) []byte {
	b := frameStart()
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(bytesWriter{&b})
	if typ == TypeCompletion {
		e.EncodeArrayLen(5)
		e.EncodeInt(int64(typ))
		e.EncodeMapLen(0)
		e.EncodeString(id)
		e.EncodeInt(1)
		e.EncodeString(errText)
	} else {
		e.EncodeArrayLen(3)
		e.EncodeInt(int64(typ))
		e.EncodeMapLen(0)
		e.EncodeString(id)
	}
	return appendFrame(b)
}

// encodeJSONAsMsgPack writes the MessagePack value of a JSON text: integers
// as integers, other numbers as float64, object keys sorted so equal
// arguments encode equally.
func encodeJSONAsMsgPack(e *msgpack.Encoder, raw json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return err
	}
	return encodeJSONValue(e, v)
}

func encodeJSONValue(e *msgpack.Encoder, v any) error {
	switch v := v.(type) {
	case nil:
		return e.EncodeNil()
	case bool:
		return e.EncodeBool(v)
	case string:
		return e.EncodeString(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return e.EncodeInt(i)
		}
		f, err := v.Float64()
		if err != nil {
			return err
		}
		return e.EncodeFloat64(f)
	case []any:
		if err := e.EncodeArrayLen(len(v)); err != nil {
			return err
		}
		for _, x := range v {
			if err := encodeJSONValue(e, x); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if err := e.EncodeMapLen(len(keys)); err != nil {
			return err
		}
		for _, k := range keys {
			e.EncodeString(k)
			if err := encodeJSONValue(e, v[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected JSON value %T", v)
}

// maxDepth bounds nesting when converting or walking a payload, so a
// hostile server's deeply nested arrays cannot exhaust the stack.
const maxDepth = 256

// MsgPackToJSON converts one MessagePack value to JSON, for the callers
// that take JSON (Invoke's result, On handlers): timestamps become RFC
// 3339 strings, binary becomes base64, other extension types null, and map
// keys that are not strings their JSON text.
func MsgPackToJSON(raw []byte) (json.RawMessage, error) {
	r := newMPReader(raw)
	// Checked whole first, so no declared length below can exceed what
	// is there.
	if err := r.whole(); err != nil {
		return nil, err
	}
	out, err := r.appendJSON(nil, 0)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (m *mpReader) appendJSON(b []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("nested too deep")
	}
	c, err := m.d.PeekCode()
	if err != nil {
		return b, err
	}
	switch {
	case c == msgpcode.Nil:
		return append(b, "null"...), m.d.DecodeNil()
	case c == msgpcode.True || c == msgpcode.False:
		v, err := m.d.DecodeBool()
		return strconv.AppendBool(b, v), err
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Int8 && c <= msgpcode.Int64:
		v, err := m.d.DecodeInt64()
		return strconv.AppendInt(b, v, 10), err
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint64:
		v, err := m.d.DecodeUint64()
		return strconv.AppendUint(b, v, 10), err
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := m.d.DecodeFloat64()
		if err != nil {
			return b, err
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return append(b, "null"...), nil
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64), nil
	case msgpcode.IsString(c):
		s, err := m.d.DecodeString()
		if err != nil {
			return b, err
		}
		q, _ := json.Marshal(s)
		return append(b, q...), nil
	case msgpcode.IsBin(c):
		v, err := m.d.DecodeBytes()
		if err != nil {
			return b, err
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"'), nil
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := m.d.DecodeArrayLen()
		if err != nil {
			return b, err
		}
		b = append(b, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = m.appendJSON(b, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := m.d.DecodeMapLen()
		if err != nil {
			return b, err
		}
		b = append(b, '{')
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			kc, err := m.d.PeekCode()
			if err != nil {
				return b, err
			}
			if msgpcode.IsString(kc) {
				b, err = m.appendJSON(b, depth+1)
			} else {
				var k []byte
				k, err = m.appendJSON(nil, depth+1)
				q, _ := json.Marshal(string(k))
				b = append(b, q...)
			}
			if err != nil {
				return b, err
			}
			b = append(b, ':')
			if b, err = m.appendJSON(b, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case msgpcode.IsExt(c) || msgpcode.IsFixedExt(c):
		start := m.pos()
		id, _, err := m.d.DecodeExtHeader()
		if err != nil {
			return b, err
		}
		if id == -1 {
			m.r.Seek(int64(start), 0)
			t, err := m.d.DecodeTime()
			if err != nil {
				return b, err
			}
			return append(append(append(b, '"'), t.UTC().Format(time.RFC3339Nano)...), '"'), nil
		}
		m.r.Seek(int64(start), 0)
		return append(b, "null"...), m.d.Skip()
	}
	return b, fmt.Errorf("unknown MessagePack code 0x%02x", c)
}

// msgpackTimeAt finds the send time at path in a push's raw MessagePack
// arguments: a timestamp extension value, or a number or numeric string of
// milliseconds since the epoch. Path elements index arrays (0, 1, ...)
// and key maps.
func msgpackTimeAt(raw []byte, path []string) (time.Time, bool) {
	r := newMPReader(raw)
	if r.whole() != nil {
		return time.Time{}, false
	}
	for _, key := range path {
		c, err := r.d.PeekCode()
		if err != nil {
			return time.Time{}, false
		}
		switch {
		case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 {
				return time.Time{}, false
			}
			n, err := r.d.DecodeArrayLen()
			if err != nil || i >= n {
				return time.Time{}, false
			}
			for ; i > 0; i-- {
				if r.d.Skip() != nil {
					return time.Time{}, false
				}
			}
		case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
			n, err := r.d.DecodeMapLen()
			if err != nil {
				return time.Time{}, false
			}
			found := false
			for ; n > 0 && !found; n-- {
				kc, err := r.d.PeekCode()
				if err != nil {
					return time.Time{}, false
				}
				if msgpcode.IsString(kc) {
					k, err := r.d.DecodeString()
					if err != nil {
						return time.Time{}, false
					}
					found = k == key
				} else {
					k, err := r.appendJSON(nil, 0)
					if err != nil {
						return time.Time{}, false
					}
					found = string(k) == key
				}
				if !found && r.d.Skip() != nil {
					return time.Time{}, false
				}
			}
			if !found {
				return time.Time{}, false
			}
		default:
			return time.Time{}, false
		}
	}
	c, err := r.d.PeekCode()
	if err != nil {
		return time.Time{}, false
	}
	switch {
	case msgpcode.IsExt(c) || msgpcode.IsFixedExt(c):
		t, err := r.d.DecodeTime()
		return t, err == nil
	case msgpcode.IsString(c):
		s, err := r.d.DecodeString()
		if err != nil {
			return time.Time{}, false
		}
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return time.Time{}, false
		}
		return msTime(ms)
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Float && c <= msgpcode.Int64:
		ms, err := r.d.DecodeFloat64()
		if err != nil {
			return time.Time{}, false
		}
		return msTime(ms)
	}
	return time.Time{}, false
}

func msTime(ms float64) (time.Time, bool) {
	if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > 1e15 {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(ms)), true
}
