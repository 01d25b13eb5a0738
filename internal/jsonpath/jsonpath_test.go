package jsonpath

import (
	"strings"
	"testing"
)

func TestDecodeTakesOneDocument(t *testing.T) {
	for _, bad := range []string{``, `{"a":1} {"b":2}`, `{"a":1`, `1 2`} {
		if Decode([]byte(bad)) != nil {
			t.Errorf("%q decoded", bad)
		}
	}
	if Decode([]byte(" {\"a\": 1}\n")) == nil {
		t.Error("a document with white space around it was refused")
	}
}

func TestLookupKeepsNumbersAsWritten(t *testing.T) {
	doc := []byte(`{"id": 1234567890123456789, "n": 1.50, "e": 1E2, "s": "x\u0041", "t": true, "z": null,
		"items": [{"id": 9007199254740993}, 2], "o": { "b": 1, "a": [1.0] }}`)
	for path, want := range map[string]string{
		"id": "1234567890123456789", "n": "1.50", "e": "1E2", "s": "xA", "t": "true", "z": "null",
		"items.0.id": "9007199254740993", "items.1": "2", "o": `{"a":[1.0],"b":1}`,
	} {
		got, ok := Lookup(doc, strings.Split(path, "."))
		if !ok || got != want {
			t.Errorf("%s = %q, %v; want %q", path, got, ok, want)
		}
	}
	for _, path := range []string{"o.b.x", "z.x", "missing", "items.2", "items.-1", "items.x", "id.0", "s.x"} {
		if got, ok := Lookup(doc, strings.Split(path, ".")); ok {
			t.Errorf("%s found %q", path, got)
		}
	}
	if _, ok := Lookup([]byte(`{"a":1} trailing`), []string{"a"}); ok {
		t.Error("a message with bytes after its document was walked")
	}
}
