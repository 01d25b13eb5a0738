package vu

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// decodeJSON decodes a response body for checks and captures, or returns
// nil when it is not one JSON document. Numbers stay json.Number, their
// text as the server wrote it: a float64 would turn the id
// 1234567890123456789 into 1234567890123456800 and 1.50 into 1.5, while a
// WebSocket capture (proto/ws.JSONAt) keeps the text.
func decodeJSON(body []byte) any {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil
	}
	// One document only, as json.Unmarshal requires.
	if _, err := dec.Token(); err != io.EOF {
		return nil
	}
	return doc
}

// jsonAt walks a decoded document; numeric parts index arrays. Scalars are
// returned as their text (strings unquoted, numbers as written).
func jsonAt(doc any, path []string) (string, bool) {
	cur := doc
	for _, p := range path {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[p]
			if !ok {
				return "", false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(v) {
				return "", false
			}
			cur = v[i]
		default:
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case json.Number:
		return string(v), true
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(v), true
	default:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
}

// decodeItems decodes a for_each list held as text (a capture): whole
// numbers become int64, exact (an id of 1234567890123456789 went out as
// 1234567890123456768 through float64), and others float64, so items
// render as the server wrote them and expressions can still do sums.
func decodeItems(s string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return exactNumbers(doc), true
}

func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	}
	return v
}
