package vu

import (
	"encoding/json"
	"io"
	"strings"
)

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
