package vu

import (
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

const bigNumbersAnswer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 76\r\n\r\n" +
	`{"id": 1234567890123456789, "price": 1.50, "n": {"big": 9007199254740993}}` + "\r\n"

// An HTTP capture and an expect: json keep a number's text as the server
// wrote it, as a WebSocket capture does: decoded through float64 the id
// became 1234567890123456800, 1.50 became 1.5 and the expectation below
// failed.
func TestJSONCaptureKeepsNumbersExact(t *testing.T) {
	base := cannedServer(t, bigNumbersAnswer)
	u, sc, rec := recUserFor(t, `
scenarios:
  s:
    steps:
      - name: get
        get: /order
        expect: {status: 200, json: {id: "1234567890123456789", price: "1.50"}}
        capture: {id: {json: id}, price: {json: price}, nested: {json: n}}
load: {stages: [{duration: 1s, users: 1}]}
`, base, metrics.ErrorOptions{})
	u.Iterate(sc, time.Time{}, Stop{Soft: make(chan struct{})})
	if errs := rec.Snapshot().Steps[0].Errors; len(errs) != 0 {
		t.Fatalf("the exact expectation failed: %+v", errs)
	}
	want := map[string]string{"id": "1234567890123456789", "price": "1.50", "nested": `{"big":9007199254740993}`}
	for i, name := range sc.CaptureNames {
		if w, ok := want[name]; ok && u.env.Captures[i] != w {
			t.Errorf("capture %s = %q, want %q", name, u.env.Captures[i], w)
		}
	}
}

// for_each over a captured list hands out its numbers exact: through
// float64 the id went out as 1234567890123456768.
func TestForEachItemsKeepNumbersExact(t *testing.T) {
	p, err := plan.Parse("t.yaml", []byte(`
target: http://127.0.0.1:1
scenarios:
  s:
    steps:
      - {get: /, capture: {ids: {json: ids}}}
      - for_each: ids
        steps: [{get: "/x/{{ item }}"}]
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &User{}
	u.env.Captures = []string{`[1234567890123456789, {"id": 9007199254740993, "p": 1.5}, 2]`, ""}
	items, err := u.listOf(p.Scenarios[0].Steps[1].Flow.Cond)
	if err != nil || len(items) != 3 {
		t.Fatalf("%v, %v", items, err)
	}
	for i, want := range []string{"1234567890123456789", `{"id":9007199254740993,"p":1.5}`, "2"} {
		if got := itemText(items[i]); got != want {
			t.Errorf("item %d: %q, want %q", i, got, want)
		}
	}
}
