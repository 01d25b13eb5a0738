package plan

import (
	"strings"
	"testing"
)

func signalrPlan(section string) string {
	return "target: http://h\nscenarios:\n  k:\n    users: 1\n    signalr: {url: /h" + section + "}\nload: {stages: [{duration: 1s, users: 1}]}\n"
}

// TestSignalRProtocolTransport: protocol and transport are read, defaults
// are empty (json over websockets), and impossible pairs are refused.
func TestSignalRProtocolTransport(t *testing.T) {
	for _, tc := range []struct {
		section, proto, transport string
	}{
		{"", "", ""},
		{", protocol: messagepack", "messagepack", ""},
		{", protocol: json, transport: sse", "json", "sse"},
		{", protocol: messagepack, transport: long_polling", "messagepack", "long_polling"},
		{", protocol: messagepack, transport: auto", "messagepack", "auto"},
		{", transport: websockets, skip_negotiate: true", "", "websockets"},
	} {
		p, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err != nil {
			t.Fatalf("%q: %v", tc.section, err)
		}
		sr := p.Scenarios[0].Connection.Spec().SignalR
		if sr.Protocol != tc.proto || sr.Transport != tc.transport {
			t.Errorf("%q: protocol %q transport %q", tc.section, sr.Protocol, sr.Transport)
		}
	}
	for _, tc := range []struct{ section, want string }{
		{", protocol: msgpack", `bad hub protocol "msgpack": expected json or messagepack`},
		{", protocol: MessagePack", `(did you mean "messagepack"?)`},
		{", transport: longpolling", `bad transport "longpolling": expected websockets, sse, long_polling or auto (did you mean "long_polling"?)`},
		{", protocol: messagepack, transport: sse", "transport sse carries text only and cannot carry the messagepack protocol"},
		{", skip_negotiate: true, transport: long_polling", "transport long_polling needs negotiate, but skip_negotiate is set"},
	} {
		_, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.section, err, tc.want)
		}
	}
}

// TestSignalRTokenPlace: access_token_in says where a WebSocket carries
// its token (header by default), and is refused, at its line and column,
// with a value it cannot take or a transport it does not apply to.
func TestSignalRTokenPlace(t *testing.T) {
	for _, tc := range []struct {
		section string
		inQuery bool
	}{
		{"", false},
		{", access_token_in: header", false},
		{", access_token_in: query", true},
		{", transport: auto, access_token_in: query", true},
	} {
		p, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err != nil {
			t.Fatalf("%q: %v", tc.section, err)
		}
		if got := p.Scenarios[0].Connection.Spec().SignalR.WebSocketTokenInQuery; got != tc.inQuery {
			t.Errorf("%q: token in query %v", tc.section, got)
		}
	}
	for _, tc := range []struct{ section, want string }{
		{", access_token_in: url", `p.yaml:5:41: bad access_token_in "url": expected header (the .NET client's and Node's way) or query (a browser's)`},
		{", access_token_in: Query", `(did you mean "query"?)`},
		{", transport: sse, access_token_in: query", "p.yaml:5:57: access_token_in applies to the websockets transport, not sse"},
	} {
		_, err := Parse("p.yaml", []byte(signalrPlan(tc.section)), fixtureEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.section, err, tc.want)
		}
	}
}
