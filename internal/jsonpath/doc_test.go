package jsonpath

import (
	"encoding/json"
	"strings"
	"testing"
)

// docCases are documents and paths where walking the bytes must give what
// decoding gives: duplicate keys (the last wins), escaped and invalid
// UTF-8 keys and strings, exact numbers, nesting, white space, objects
// and arrays written back compact, and paths that go nowhere.
var docCases = []struct{ doc, paths string }{
	{`{"id": 1234567890123456789, "n": 1.50, "e": -1E+2, "s": "x\u0041", "t": true, "f": false, "z": null,
		"items": [{"id": 9007199254740993}, 2, "three", [4, {"five": 5}]], "o": { "b": 1, "a": [1.0, "x\"y"] }}`,
		"id n e s t f z items items.0 items.0.id items.1 items.2 items.3 items.3.1.five items.4 items.-1 items.+1 items.x o o.a o.a.1 o.b.x missing id.0 s.x"},
	{`{"a": 1, "a": {"b": 2}, "b": "first", "b": "last"}`, "a a.b b"},
	{`{"\u0061": "escaped key", "b\\c": "backslash", "é": "utf8 key", "k": "\ud83d\ude00 \n \t"}`, "a b\\c é k"},
	{"{\"bad\xff\": \"in\xfevalid\", \"ok\": \"\xff\"}", "bad\ufffd ok"},
	{` [ 1 , [ ] , { } , "" , 0 ] `, "0 1 2 3 4 5"},
	{`"just a string"`, "x"},
	{`42`, "x"},
	{`{"parties":[{"id":"p1","name":"Blue"},{"id":"p2"}],"status":"counted"}`, "parties.0.id parties.1.id parties.1.name status"},
	{`{"a":1} {"b":2}`, "a"},
	{`{"a":1`, "a"},
	{``, "a"},
	{`{"a": "unterminated}`, "a"},
}

func TestDocAtIsAtOverDecode(t *testing.T) {
	for _, c := range docCases {
		var d Doc
		d.Reset([]byte(c.doc))
		for _, p := range strings.Fields(c.paths) {
			path := strings.Split(p, ".")
			want, wantOK := Lookup([]byte(c.doc), path)
			got, ok := d.At(path)
			if got != want || ok != wantOK {
				t.Errorf("%s in %q: Doc.At = %q, %v; Lookup = %q, %v", p, c.doc, got, ok, want, wantOK)
			}
		}
		if d.Valid() != (Decode([]byte(c.doc)) != nil) {
			t.Errorf("%q: Valid %v, Decode disagrees", c.doc, d.Valid())
		}
	}
}

// A path whose value is a scalar walks the bytes and allocates nothing
// beyond the value's own text.
func TestDocAtScalarAllocatesNothing(t *testing.T) {
	data := []byte(`{"election":2026,"parties":[{"id":"p1","name":"Blue"},{"id":"p2","name":"Green"}],"status":"counted"}`)
	path, status := []string{"parties", "0", "id"}, []string{"status"}
	var d Doc
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(data)
		if v, ok := d.At(path); !ok || v != "p1" {
			t.Fatalf("parties.0.id = %q, %v", v, ok)
		}
		if v, ok := d.At(status); !ok || v != "counted" {
			t.Fatalf("status = %q, %v", v, ok)
		}
	})
	// The two strings returned ("p1", "counted") are each one allocation
	// at most.
	if allocs > 2 {
		t.Errorf("%v allocations for two scalar paths; want at most 2 (their text)", allocs)
	}
}

func FuzzDocAtIsAtOverDecode(f *testing.F) {
	for _, c := range docCases {
		for _, p := range strings.Fields(c.paths) {
			f.Add(c.doc, p)
		}
	}
	f.Fuzz(func(t *testing.T, doc, p string) {
		path := strings.Split(p, ".")
		var d Doc
		d.Reset([]byte(doc))
		want, wantOK := Lookup([]byte(doc), path)
		if got, ok := d.At(path); got != want || ok != wantOK {
			t.Errorf("%q in %q: Doc.At = %q, %v; Lookup = %q, %v", p, doc, got, ok, want, wantOK)
		}
	})
}

func BenchmarkDocAtVotingAnswer(b *testing.B) {
	data := []byte(`{"election":2026,"parties":[{"id":"p1","name":"Blue"},{"id":"p2","name":"Green"},{"id":"p3","name":"Red"}],"status":"counted"}`)
	path := []string{"parties", "0", "id"}
	b.Run("Doc", func(b *testing.B) {
		b.ReportAllocs()
		var d Doc
		for i := 0; i < b.N; i++ {
			d.Reset(data)
			d.At(path)
		}
	})
	b.Run("Lookup", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			Lookup(data, path)
		}
	})
}

// validCases are documents valid and not, at the grammar's edges.
var validCases = []string{
	``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `1.0e+10`, `-12.5E3`, `+1`,
	`true`, `tru`, `truex`, `null`, `nul`, `false `, `"`, `""`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\x"`,
	"\"tab\there\"", "\"\xff\xfe\"", `[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `{}`, `{ }`, `{"a"}`, `{"a":}`,
	`{"a":1,}`, `{"a":1 "b":2}`, `{1:2}`, `{"a":1}x`, `{"a":[{"b":[null,true,false,"x",-1.5e3]}]}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

func TestValidIsJSONValid(t *testing.T) {
	for _, c := range validCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%.40q) = %v, json.Valid %v", c, got, want)
		}
	}
}

func FuzzValidIsJSONValid(f *testing.F) {
	for _, c := range validCases {
		f.Add(c)
	}
	for _, c := range docCases {
		f.Add(c.doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if got, want := valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid %v", doc, got, want)
		}
	})
}
