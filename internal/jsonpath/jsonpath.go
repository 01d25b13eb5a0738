// Package jsonpath finds the value at a dotted path in a JSON document for
// captures, checks and message matchers, keeping numbers as the server wrote
// them: one walker for HTTP answers, WebSocket and SignalR messages, so the
// same document gives every one of them the same value.
package jsonpath

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// Decode decodes one JSON document, or returns nil when data is not exactly
// one. Numbers stay json.Number, their text as written: a float64 would
// turn the id 1234567890123456789 into 1234567890123456800 and 1.50 into
// 1.5.
func Decode(data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
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

// At walks a decoded document; numeric parts index arrays. Scalars are
// returned as their text (strings unquoted, numbers as written, null as
// "null"); objects and arrays as compact JSON.
func At(doc any, path []string) (string, bool) {
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

// Lookup is At over data decoded by Decode; data that is not one JSON
// document has nothing at any path.
func Lookup(data []byte, path []string) (string, bool) {
	doc := Decode(data)
	if doc == nil {
		return "", false
	}
	return At(doc, path)
}
