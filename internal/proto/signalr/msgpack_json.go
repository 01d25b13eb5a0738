package signalr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

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
		return m.appendJSONArray(b, depth)
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return m.appendJSONMap(b, depth)
	case msgpcode.IsExt(c) || msgpcode.IsFixedExt(c):
		return m.appendJSONExt(b)
	}
	return b, fmt.Errorf("unknown MessagePack code 0x%02x", c)
}

func (m *mpReader) appendJSONArray(b []byte, depth int) ([]byte, error) {
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
}

// appendJSONMap writes a map as an object; a key that is not a string
// becomes its JSON text, quoted.
func (m *mpReader) appendJSONMap(b []byte, depth int) ([]byte, error) {
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
}

// appendJSONExt writes a timestamp as an RFC 3339 string and any other
// extension as null.
func (m *mpReader) appendJSONExt(b []byte) ([]byte, error) {
	start := m.pos()
	id, _, err := m.d.DecodeExtHeader()
	if err != nil {
		return b, err
	}
	_, _ = m.r.Seek(int64(start), 0)
	if id != -1 {
		return append(b, "null"...), m.d.Skip()
	}
	t, err := m.d.DecodeTime()
	if err != nil {
		return b, err
	}
	return append(append(append(b, '"'), t.UTC().Format(time.RFC3339Nano)...), '"'), nil
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
		var ok bool
		switch {
		case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
			ok = r.enterArray(key)
		case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
			ok = r.enterMap(key)
		}
		if !ok {
			return time.Time{}, false
		}
	}
	return r.timeHere()
}

// enterArray moves to the element of the array here that key indexes.
func (m *mpReader) enterArray(key string) bool {
	i, err := strconv.Atoi(key)
	if err != nil || i < 0 {
		return false
	}
	n, err := m.d.DecodeArrayLen()
	if err != nil || i >= n {
		return false
	}
	for ; i > 0; i-- {
		if m.d.Skip() != nil {
			return false
		}
	}
	return true
}

// enterMap moves to the value of the map here under key (a key that is
// not a string matches by its JSON text).
func (m *mpReader) enterMap(key string) bool {
	n, err := m.d.DecodeMapLen()
	if err != nil {
		return false
	}
	for ; n > 0; n-- {
		kc, err := m.d.PeekCode()
		if err != nil {
			return false
		}
		var k string
		if msgpcode.IsString(kc) {
			k, err = m.d.DecodeString()
		} else {
			var kb []byte
			kb, err = m.appendJSON(nil, 0)
			k = string(kb)
		}
		if err != nil {
			return false
		}
		if k == key {
			return true
		}
		if m.d.Skip() != nil {
			return false
		}
	}
	return false
}

// timeHere reads the value here as a send time.
func (m *mpReader) timeHere() (time.Time, bool) {
	c, err := m.d.PeekCode()
	if err != nil {
		return time.Time{}, false
	}
	switch {
	case msgpcode.IsExt(c) || msgpcode.IsFixedExt(c):
		t, err := m.d.DecodeTime()
		return t, err == nil
	case msgpcode.IsString(c):
		s, err := m.d.DecodeString()
		if err != nil {
			return time.Time{}, false
		}
		ms, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return time.Time{}, false
		}
		return msTime(ms)
	case msgpcode.IsFixedNum(c) || c >= msgpcode.Float && c <= msgpcode.Int64:
		ms, err := m.d.DecodeFloat64()
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
