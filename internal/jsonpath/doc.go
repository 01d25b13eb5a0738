package jsonpath

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Doc is one JSON document as captures and checks read it: validated once,
// then walked along each path over its bytes, without the tree Decode
// builds (a map per object, an interface per value: nearly every
// allocation of a flow that captures or checks JSON). Only a path whose
// value is an object or an array decodes the document, once, to write
// that value as At does. A Doc gives every path the value At gives over
// Decode: the last of duplicate keys, strings unquoted as encoding/json
// unquotes them, numbers as written.
type Doc struct {
	data  []byte
	valid int8 // 0: not yet looked at; 1: one JSON document; -1: not
	tree  any  // Decode(data), once a path needed it
	built bool
}

// Reset makes d the document in data, which d reads until the next Reset
// (the caller keeps data unchanged until then).
func (d *Doc) Reset(data []byte) { *d = Doc{data: data} }

// Valid says the data is exactly one JSON document, as Decode requires.
func (d *Doc) Valid() bool {
	if d.valid == 0 {
		d.valid = -1
		if valid(d.data) {
			d.valid = 1
		}
	}
	return d.valid == 1
}

// At is At(Decode(data), path): the value at path, as its text.
func (d *Doc) At(path []string) (string, bool) {
	if !d.Valid() {
		return "", false
	}
	w := walker{b: d.data}
	w.space()
	for _, p := range path {
		if !w.enter(p) {
			return "", false
		}
	}
	start := w.i
	switch w.b[start] {
	case '{', '[':
		// Written compact with sorted keys, as At writes a decoded one.
		if !d.built {
			d.tree, d.built = Decode(d.data), true
		}
		return At(d.tree, path)
	case '"':
		w.skip()
		return unquote(w.b[start:w.i])
	}
	w.skip()
	return string(w.b[start:w.i]), true
}

// unquote is the string a JSON string literal (quotes included) decodes
// to: its bytes when it has no escape and is valid UTF-8, else what
// encoding/json makes of it (escapes, and U+FFFD for invalid bytes).
func unquote(lit []byte) (string, bool) {
	in := lit[1 : len(lit)-1]
	if plainString(in) {
		return string(in), true
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", false
	}
	return s, true
}

func plainString(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// walker moves over a document already known valid (Doc.Valid), so it
// needs no error paths of its own: i is at a value's first byte.
type walker struct {
	b []byte
	i int
}

func (w *walker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// enter moves to the member p of the object or element p of the array at
// i: for an object, the last member named p, as a decoded map holds it.
func (w *walker) enter(p string) bool {
	switch w.b[w.i] {
	case '{':
		return w.member(p)
	case '[':
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return false
		}
		return w.element(n)
	}
	return false
}

func (w *walker) member(p string) bool {
	found := -1
	w.i++ // {
	for {
		w.space()
		if w.b[w.i] == '}' {
			break
		}
		kstart := w.i
		w.skip()
		key := w.b[kstart:w.i]
		w.space()
		w.i++ // :
		w.space()
		if keyIs(key, p) {
			found = w.i
		}
		w.skip()
		w.space()
		if w.b[w.i] == ',' {
			w.i++
		}
	}
	if found < 0 {
		return false
	}
	w.i = found
	return true
}

func keyIs(lit []byte, p string) bool {
	in := lit[1 : len(lit)-1]
	if plainString(in) {
		return string(in) == p
	}
	s, ok := unquote(lit)
	return ok && s == p
}

func (w *walker) element(n int) bool {
	w.i++ // [
	for k := 0; ; k++ {
		w.space()
		if w.b[w.i] == ']' {
			return false
		}
		if k == n {
			return true
		}
		w.skip()
		w.space()
		if w.b[w.i] == ',' {
			w.i++
		}
	}
}

// skip moves past the value at i.
func (w *walker) skip() {
	switch w.b[w.i] {
	case '"':
		w.i++
		for w.b[w.i] != '"' {
			if w.b[w.i] == '\\' {
				w.i++
			}
			w.i++
		}
		w.i++
	case '{', '[':
		depth := 0
		for {
			switch w.b[w.i] {
			case '"':
				w.skip()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.i++
			if depth == 0 {
				return
			}
		}
	default:
		// A number, true, false or null: up to the next delimiter.
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.i++
		}
	}
}
