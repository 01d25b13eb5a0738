package signalr

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/sample"
)

// The tables below are written from the hub protocol specification
// (dotnet/aspnetcore src/SignalR/docs/specs/HubProtocol.md and
// TransportProtocols.md) and from what the official .NET and JavaScript
// clients accept and refuse; a refusal carries the official client's
// reason. want "" means the input is valid.

func TestJSONHubMessagesStrict(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"type":1,"target":"OrderPlaced","arguments":[1,"a"]}`, ""},
		{`{"type":1,"invocationId":"7","target":"GetStatus","arguments":[]}`, ""},
		{`{"type":1,"target":"T","arguments":[],"headers":{"a":"b"}}`, ""},
		{`{"type":2,"invocationId":"1","item":null}`, ""},
		{`{"type":3,"invocationId":"1","result":42}`, ""},
		{`{"type":3,"invocationId":"1","error":"boom"}`, ""},
		{`{"type":3,"invocationId":"1"}`, ""},
		{`{"type":3,"invocationId":"1","error":null,"result":1}`, ""},
		{`{"type":6}`, ""},
		{`{"type":7}`, ""},
		{`{"type":7,"error":"bye","allowReconnect":true}`, ""},
		{`{"type":8,"sequenceId":1394}`, ""},
		{`{"type":9,"sequenceId":0}`, ""},
		{`{"type":99,"future":true}`, ""}, // newer message types are ignored
		{`{}`, "Missing required property 'type'."},
		{`null`, "Missing required property 'type'."},
		{`{"type":"foo"}`, "Expected 'type' to be of type Integer."},
		{`{"type":1}`, "Missing required property 'target'."},
		{`{"type":1,"invocationId":42,"target":"T","arguments":[]}`, "Expected 'invocationId' to be of type String."},
		{`{"type":1,"invocationId":"","target":"T","arguments":[]}`, "Invalid payload for Invocation message."},
		{`{"type":1,"target":42,"arguments":[]}`, "Expected 'target' to be of type String."},
		{`{"type":1,"target":"","arguments":[]}`, "Invalid payload for Invocation message."},
		{`{"type":1,"target":"foo"}`, "Missing required property 'arguments'."},
		{`{"type":1,"target":"foo","arguments":{}}`, "Expected 'arguments' to be of type Array."},
		{`{"type":1,"target":"foo","arguments":[],"headers":{"Foo":true}}`, "Expected header 'Foo' to be of type String."},
		{`{"type":1,"target":"foo","arguments":[],"headers":[]}`, "Expected 'headers' to be of type Object."},
		{`{"type":2}`, "Missing required property 'invocationId'."},
		{`{"type":2,"invocationId":42}`, "Expected 'invocationId' to be of type String."},
		{`{"type":2,"invocationId":"42"}`, "Missing required property 'item'."},
		{`{"type":2,"invocationId":"","item":1}`, "Invalid payload for StreamItem message."},
		{`{"type":3}`, "Missing required property 'invocationId'."},
		{`{"type":3,"invocationId":""}`, "Invalid payload for Completion message."},
		{`{"type":3,"invocationId":"42","error":[]}`, "Expected 'error' to be of type String."},
		{`{"type":3,"invocationId":"42","error":"foo","result":true}`, "The 'error' and 'result' properties are mutually exclusive."},
		{`{"type":4,"target":"foo","arguments":[]}`, "Missing required property 'invocationId'."},
		{`{"type":4,"invocationId":"42","target":"foo"}`, "Missing required property 'arguments'."},
		{`{"type":5}`, "Missing required property 'invocationId'."},
		{`{"type":7,"error":42}`, "Expected 'error' to be of type String."},
		{`{"type":8}`, "Missing required property 'sequenceId'."},
		{`{"type":9}`, "Missing required property 'sequenceId'."},
		{`{"type":8,"sequenceId":"1"}`, "Expected 'sequenceId' to be of type Integer."},
	}
	for _, tc := range cases {
		_, err := ParseMessage([]byte(tc.in))
		checkVerdict(t, tc.in, err, tc.want)
	}
}

// TestEmptyErrorIsNoError: both official clients read an empty error as
// none (JavaScript by truthiness, .NET by string.IsNullOrEmpty), in a
// Completion and in a Close, in either protocol.
func TestEmptyErrorIsNoError(t *testing.T) {
	for _, in := range []string{`{"type":3,"invocationId":"1","error":""}`, `{"type":7,"error":""}`} {
		m, err := ParseMessage([]byte(in))
		if err != nil || m.Error != "" {
			t.Errorf("%s: %+v %v", in, m, err)
		}
	}
	for _, b := range [][]byte{
		{0x95, 3, 0x80, 0xa3, 'x', 'y', 'z', 1, 0xa0}, // Completion, resultKind error, ""
		{0x93, 7, 0xa0, 0xc2},                         // Close, error ""
	} {
		m, err := ParseMsgPack(b)
		if err != nil || m.Error != "" {
			t.Errorf("%x: %+v %v", b, m, err)
		}
	}
}

func TestHandshakeStrict(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{}`, ""},
		{` { } `, ""},
		{`null`, "Expected a JSON Object."},
		{`42`, "Expected a JSON Object."},
		{`[]`, "Expected a JSON Object."},
		{``, "Expected a JSON Object."},
		{`{"error":null}`, "Expected 'error' to be of type String."},
		{`{"error":42}`, "Expected 'error' to be of type String."},
		{`{"type":1,"target":"OrderPlaced","arguments":[]}`, "Expected a handshake response from the server."},
		{`{"type":6}`, "Expected a handshake response from the server."},
	}
	for _, tc := range cases {
		checkVerdict(t, tc.in, ParseHandshake([]byte(tc.in)), tc.want)
	}
	var refused *handshakeRefused
	if err := ParseHandshake([]byte(`{"error":"Requested protocol 'x' is not available."}`)); !errors.As(err, &refused) {
		t.Errorf("server refusal: %v", err)
	}
}

func TestMsgPackStrict(t *testing.T) {
	valid := []string{ // official vectors (MessagePackHubProtocolTestBase)
		"lgGAo3h5eqZtZXRob2SQkA==", "lgGAwKZtZXRob2SQkA==", "lAKAo3h5eio=",
		"lQOAo3h5egGwRXJyb3Igbm90IGZvdW5kIQ==", "lAOAo3h5egI=", "lQOAo3h5egMq",
		"lgSAo3h5eqZtZXRob2SQkA==", "kwWAo3h5eg==", "kQY=", "kwfAwg==", "kwemRXJyb3Ihww==",
	}
	for _, v := range valid {
		b, _ := base64.StdEncoding.DecodeString(v)
		if _, err := ParseMsgPack(b); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	// An Invocation with an empty id is fire-and-forget, as with nil.
	if m, err := ParseMsgPack([]byte{0x95, 1, 0x80, 0xa0, 0xa1, 'T', 0x90}); err != nil || m.InvocationID != "" || m.Target != "T" {
		t.Errorf("empty id: %+v %v", m, err)
	}
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"header value int", []byte{0x95, 1, 0x81, 0xa3, 'f', 'o', 'o', 42, 0xc0, 0xa1, 'T', 0x90}, "Reading 'headers[0].Value' as String failed."},
		{"header key int", []byte{0x95, 1, 0x81, 42, 0xa1, 'x', 0xc0, 0xa1, 'T', 0x90}, "Reading 'headers[0].Key' as String failed."},
		{"header value array", []byte{0x95, 1, 0x82, 0xa1, 'a', 0xa1, 'b', 0xa1, 'c', 0x90, 0xc0, 0xa1, 'T', 0x90}, "Reading 'headers[1].Value' as String failed."},
		{"headers not a map", []byte{0x95, 1, 0xa1, 'x', 0xc0, 0xa1, 'T', 0x90}, "Reading map length for 'headers' failed."},
		{"invocation id bool", []byte{0x95, 1, 0x80, 0xc2, 0xa1, 'T', 0x90}, "Reading 'invocationId' as String failed."},
		{"invocation target nil", []byte{0x95, 1, 0x80, 0xc0, 0xc0, 0x90}, "Reading 'target' as String failed."},
		{"invocation target empty", []byte{0x95, 1, 0x80, 0xc0, 0xa0, 0x90}, "Reading 'target' as String failed."},
		{"invocation target int", []byte{0x95, 1, 0x80, 0xc0, 42, 0x90}, "Reading 'target' as String failed."},
		{"stream invocation empty id", []byte{0x95, 4, 0x80, 0xa0, 0xa1, 'T', 0x90}, "Missing required property 'invocationId'."},
		{"stream item nil id", []byte{0x94, 2, 0x80, 0xc0, 42}, "Missing required property 'invocationId'."},
		{"completion empty id", []byte{0x94, 3, 0x80, 0xa0, 2}, "Missing required property 'invocationId'."},
		{"completion nil id", []byte{0x94, 3, 0x80, 0xc0, 2}, "Missing required property 'invocationId'."},
		{"completion error int", []byte{0x95, 3, 0x80, 0xa1, 'x', 1, 42}, "Reading 'error' as String failed."},
		{"cancel empty id", []byte{0x93, 5, 0x80, 0xa0}, "Missing required property 'invocationId'."},
		{"ack nil sequenceId", []byte{0x92, 8, 0xc0}, "Reading 'sequenceId' as Int64 failed."},
		{"sequence string sequenceId", []byte{0x92, 9, 0xa1, '1'}, "Reading 'sequenceId' as Int64 failed."},
	}
	for _, tc := range cases {
		_, err := ParseMsgPack(tc.in)
		checkVerdict(t, tc.name, err, tc.want)
	}
}

// TestLengthPrefixContinuationOnFifthByte: a fifth prefix byte with its
// continuation bit set can never become valid, so it fails at once
// instead of waiting for bytes that cannot help.
func TestLengthPrefixContinuationOnFifthByte(t *testing.T) {
	noCall := func([]byte) error { t.Error("no message expected"); return nil }
	if _, err := SplitFrames([]byte{0x80, 0x80, 0x80, 0x80, 0x80}, 1<<20, noCall); !errors.Is(err, errBadLength) {
		t.Errorf("5 bytes, continuation set: %v", err)
	}
	if rest, err := SplitFrames([]byte{0x80, 0x80, 0x80, 0x80}, 1<<20, noCall); err != nil || len(rest) != 4 {
		t.Errorf("4 bytes, continuation set (may still end): %v %d", err, len(rest))
	}
}

func TestNegotiateStrict(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	cases := []struct{ name, body, want string }{
		{"v1 without connectionToken", `{"negotiateVersion":1,"connectionId":"c","availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}`,
			"Missing required property 'connectionToken'."},
		// What a classic ASP.NET SignalR server answers: its Url is
		// relative, so following it as a redirect failed on the scheme.
		{"classic ASP.NET SignalR", `{"Url":"/signalr","ConnectionToken":"abc","ConnectionId":"c","KeepAliveTimeout":20.0,"DisconnectTimeout":30.0,"TryWebSockets":true,"ProtocolVersion":"1.2","TransportConnectTimeout":5.0,"LongPollDelay":0.0}`,
			"Detected a connection attempt to an ASP.NET SignalR Server."},
	}
	for _, tc := range cases {
		body := tc.body
		ts := rawHub(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}, func(context.Context, *websocket.Conn, []byte) {})
		e := connectErr(t, ts, o)
		if e.Class != sample.Protocol || !strings.Contains(e.Msg, tc.want) {
			t.Errorf("%s: %v (%v)", tc.name, e, e.Class)
		}
	}
}

// TestHubMessageInPlaceOfHandshake: the connection is refused as a
// protocol violation and the message that came instead is named.
func TestHubMessageInPlaceOfHandshake(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	ts := rawHub(t, nil, func(ctx context.Context, c *websocket.Conn, _ []byte) {
		write(ctx, c, `{"type":1,"target":"OrderPlaced","arguments":[]}`+"\x1e")
		drain(ctx, c)
	})
	e := connectErr(t, ts, o)
	if e.Class != sample.Protocol || !strings.Contains(e.Msg, "Expected a handshake response from the server.") || !strings.Contains(e.Msg, "OrderPlaced") {
		t.Errorf("%v (%v)", e, e.Class)
	}
}

// TestCompletionWithoutIDIsProtocolError: the awaited call fails at once
// as a protocol violation, not later as a timeout.
func TestCompletionWithoutIDIsProtocolError(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
		c.Read(ctx) // the invocation
		write(ctx, c, `{"type":3,"result":1}`+"\x1e")
		drain(ctx, c)
	})
	ctx, cancel := context.WithCancel(ctx5(t))
	defer cancel()
	_, err := c.Invoke(ctx, "Add", 1, 2)
	var e *Error
	if !errors.As(err, &e) || e.Class != sample.Protocol || !strings.Contains(e.Msg, "Missing required property 'invocationId'.") {
		t.Fatalf("%v", err)
	}
	if d := waitDone(t, c); d.Class != sample.Protocol {
		t.Errorf("disconnect %+v", d)
	}
}

// checkVerdict: want "" is valid input; otherwise the error must be a
// ProtocolViolation carrying want.
func checkVerdict(t *testing.T, name string, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
		return
	}
	var v *ProtocolViolation
	if !errors.As(err, &v) || v.Reason != want {
		t.Errorf("%s: got %v, want %q", name, err, want)
	}
}
