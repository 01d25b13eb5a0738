package signalr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

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
	_ = e.EncodeArrayLen(6)
	_ = e.EncodeInt(int64(typ))
	_ = e.EncodeMapLen(0)
	if id == "" {
		_ = e.EncodeNil()
	} else {
		_ = e.EncodeString(id)
	}
	_ = e.EncodeString(target)
	_ = e.EncodeArrayLen(len(args))
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
		_ = e.EncodeArrayLen(5)
		_ = e.EncodeInt(int64(typ))
		_ = e.EncodeMapLen(0)
		_ = e.EncodeString(id)
		_ = e.EncodeInt(1)
		_ = e.EncodeString(errText)
	} else {
		_ = e.EncodeArrayLen(3)
		_ = e.EncodeInt(int64(typ))
		_ = e.EncodeMapLen(0)
		_ = e.EncodeString(id)
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
			_ = e.EncodeString(k)
			if err := encodeJSONValue(e, v[k]); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unexpected JSON value %T", v)
}
