package convert

import (
	"os"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/plan"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A HAR saved with a UTF-8 byte order mark (Fiddler, Windows editors) was
// refused as "not a HAR file".
func TestHARWithBOM(t *testing.T) {
	p, _, s := load(t, readFixture(t, "bom.har"), Options{})
	if s.Kept != 1 || len(requests(p)) != 1 || requests(p)[0].URL.Source != "/api/items" {
		t.Fatalf("kept %d, steps %d", s.Kept, len(requests(p)))
	}
}

// Chromium's _webSocketMessages were dropped with the upgrade's entry: the
// connection becomes a WebSocket scenario with its sends in order, a wait
// for the answer that names its kind, the recorded pause as a hold, and
// what a plan cannot send named in the header comment.
func TestHARWebSocketMessagesBecomeAScenario(t *testing.T) {
	p, text, s := load(t, readFixture(t, "websocket.har"), Options{})
	if len(p.Scenarios) != 2 {
		t.Fatalf("%d scenarios, want the requests' and the connection's:\n%s", len(p.Scenarios), text)
	}
	var ws *plan.WebSocketSpec
	for _, sc := range p.Scenarios {
		if sc.Connection != nil {
			ws = sc.Connection.Spec().WebSocket
		}
	}
	if ws == nil {
		t.Fatalf("no WebSocket scenario:\n%s", text)
	}
	var kinds []string
	for _, st := range ws.Steps {
		kinds = append(kinds, [...]string{"send", "wait", "hold", "close"}[st.Kind])
	}
	// send subscribe, wait subscribed, hold 2s, send binary text, hold
	// 100ms, send bye; the ping is not matched and the non-text binary is
	// left out.
	if got := strings.Join(kinds, " "); got != "send wait hold send hold send" {
		t.Errorf("steps %q:\n%s", got, text)
	}
	for _, want := range []string{
		"url: wss://shop.test/live?room=7",
		"json: type, equals: subscribed",
		`send: '{"op": "subscribe", "channel": "prices"}'`,
		"binary: 'hello {{ vars.stampede_lbrace }} not a template }} $${HOME}'",
		"hold: 2s",
		"# entry 2: WebSocket message 5 (sent) left out: a binary message of 4 bytes that are not text",
		"# entry 2: 1 received WebSocket message(s) are not waited for",
		"# WebSocket connections recorded: 1, as scenario(s) recording_websocket",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if !ws.Steps[3].Binary || len(s.Notes) < 3 {
		t.Errorf("binary %v, notes %v", ws.Steps[3].Binary, s.Notes)
	}
}

// A recording of a WebSocket connection alone still makes a plan: its
// target is the connection's host.
func TestHARWebSocketOnly(t *testing.T) {
	har := readFixture(t, "websocket.har")
	// Drop the first entry, the one request.
	i := strings.Index(string(har), `"entries": [`) + len(`"entries": [`)
	j := strings.Index(string(har), `"startedDateTime": "2026-11-24T10:00:01`)
	k := strings.LastIndex(string(har[:j]), "{")
	only := string(har[:i]) + string(har[k:])
	p, text, _ := load(t, []byte(only), Options{})
	if len(p.Scenarios) != 1 || p.Scenarios[0].Connection == nil || p.Target != "https://shop.test" {
		t.Fatalf("want one WebSocket scenario with target https://shop.test:\n%s", text)
	}
}
