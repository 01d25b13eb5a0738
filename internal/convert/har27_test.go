package convert

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// harWith is a HAR of the given entries, each {method, url, body, response}.
func harWith(t *testing.T, entries ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"log": map[string]any{"entries": entries}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deepJSON(depth int) string {
	return strings.Repeat(`{"a":`, depth) + `"tok-12345678"` + strings.Repeat("}", depth)
}

func jsonEntry(url, body, resp string) map[string]any {
	return map[string]any{
		"request": map[string]any{"method": "POST", "url": url,
			"headers":  []any{map[string]any{"name": "Content-Type", "value": "application/json"}},
			"postData": map[string]any{"mimeType": "application/json", "text": body}},
		"response": map[string]any{"status": 200, "content": map[string]any{"mimeType": "application/json", "text": resp}},
	}
}

// A body nested thousands deep costs memory in proportion to its size,
// not to its depth squared: before, walking it kept a fresh copy of the
// path at every level (depth 8,000 took 763 MB; 100,000 in a 200 KB file
// grew past 22 GB), and the result said nothing about it.
func TestHARDeepJSONBodiesAreBounded(t *testing.T) {
	for _, depth := range []int{5_000, 100_000} {
		har := harWith(t, jsonEntry("https://api.test/v1/x", deepJSON(depth), deepJSON(depth)))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out, s, err := HAR(har, Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		// Allocation, not time: 64 MB is far above the input's size times
		// any constant the conversion needs, and far below depth².
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Fatalf("depth %d (%d KB of HAR): %d MB allocated", depth, len(har)>>10, alloc>>20)
		}
		notes := strings.Join(s.Notes, "\n")
		if !strings.Contains(notes, "the body is JSON nested more than") || !strings.Contains(notes, "the response is JSON nested more than") {
			t.Errorf("depth %d: notes do not say the deep bodies were kept as text:\n%s", depth, notes)
		}
		if !strings.Contains(string(out), "tok-12345678") {
			t.Errorf("depth %d: the body was not kept as recorded", depth)
		}
	}
	// A body at the cap is still read as JSON.
	_, s, err := HAR(harWith(t, jsonEntry("https://api.test/v1/x", deepJSON(maxJSONDepth), `{}`)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range s.Notes {
		if strings.Contains(n, "nested more than") {
			t.Errorf("a body %d deep: %s", maxJSONDepth, n)
		}
	}
}

// Brackets inside strings are text, not nesting.
func TestJSONTooDeepSkipsStrings(t *testing.T) {
	in := `{"s":"` + strings.Repeat(`[{\"`, 500) + `"}`
	if jsonTooDeep([]byte(in)) {
		t.Errorf("brackets in a string counted as nesting")
	}
	if !jsonTooDeep([]byte(strings.Repeat("[", maxJSONDepth+1))) {
		t.Errorf("%d levels not seen as too deep", maxJSONDepth+1)
	}
}

// An entry whose URL does not parse is left out with a note that names
// it, without repeating the URL (it may hold credentials): before, it
// vanished from the plan without a word.
func TestHARUnparsableURLIsNoted(t *testing.T) {
	har := harWith(t,
		map[string]any{"request": map[string]any{"method": "GET", "url": "https://api.test/ok"}, "response": map[string]any{"status": 200}},
		map[string]any{"request": map[string]any{"method": "get", "url": "https://user:s3cret@api.test:99999x/bad"}, "response": map[string]any{"status": 200}},
	)
	_, s, err := HAR(har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "entry 2 (GET): left out: its URL does not parse") {
		t.Errorf("no note for the entry whose URL does not parse:\n%s", notes)
	}
	if strings.Contains(notes, "s3cret") {
		t.Errorf("the note repeats the URL's password:\n%s", notes)
	}
}
