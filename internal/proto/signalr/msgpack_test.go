package signalr

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// PlaceOrderAt pushes the send time as a time.Time, which the MessagePack
// protocol carries as a timestamp extension value (the JSON one as text).
func (h *kitchen) PlaceOrderAt(id string, order int) {
	h.Clients().Group("r"+id).Send("OrderPlaced", map[string]any{"order": order, "sentAt": time.Now()})
}

func msgpackOptions() *Options {
	o := testOptions()
	o.Protocol = MessagePack
	return o
}

// TestMsgPackAgainstHub speaks MessagePack to the third-party hub:
// results, hub errors, streams, group pushes with both kinds of send time,
// fire-and-forget sends, and a server Close with allowReconnect.
func TestMsgPackAgainstHub(t *testing.T) {
	o := msgpackOptions()
	o.TimestampPath = []string{"0", "sentAt"}
	r := &rec{}
	o.Recorder = r
	noLeak(t, o)
	ts := hubServer(t, nil)
	ctx := ctx5(t)
	hub := ts.URL + "/hubs/kitchen"
	c, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Invoke(ctx, "add", 2, 3); err != nil || string(res) != "5" {
		t.Fatalf("add: %s %v", res, err)
	}
	_, err = c.Invoke(ctx, "fail")
	if e, ok := err.(*Error); !ok || e.Class != sample.ServerError || !strings.Contains(e.Msg, "kitchen on fire") {
		t.Errorf("fail: %v", err)
	}
	var items []string
	n, err := c.Stream(ctx, "count", []any{4}, func(it json.RawMessage) { items = append(items, string(it)) })
	if err != nil || n != 4 || strings.Join(items, ",") != "0,1,2,3" {
		t.Errorf("stream: %d %v %v", n, items, err)
	}
	// Arguments as plans render them: raw JSON, converted to MessagePack.
	if res, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"7"`)); err != nil || string(res) != `"joined 7"` {
		t.Fatalf("join: %s %v", res, err)
	}
	got := make(chan string, 4)
	c.On("OrderPlaced", func(args json.RawMessage) { got <- string(args) })
	waiter, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waiter.Invoke(ctx, "PlaceOrder", "7", 1); err != nil {
		t.Fatal(err)
	}
	if err := waiter.Send("PlaceOrderAt", json.RawMessage(`"7"`), json.RawMessage(`2`)); err != nil {
		t.Fatal(err)
	}
	var pushes []string
	for i := 1; i <= 2; i++ {
		select {
		case a := <-got:
			pushes = append(pushes, a)
		case <-ctx.Done():
			t.Fatalf("push %d never came", i)
		}
	}
	// Order 1's sentAt is a number, order 2's a timestamp extension
	// value, which reaches JSON callers as RFC 3339 text. The hub sends
	// group pushes on goroutines of its own: either may come first. The
	// hub encodes a Go map, so the keys come in any order: sort by order.
	sort.Slice(pushes, func(i, j int) bool {
		return strings.Contains(pushes[i], `"order":1`) && !strings.Contains(pushes[j], `"order":1`)
	})
	if !strings.Contains(pushes[0], `"order":1`) || !strings.Contains(pushes[1], `"order":2`) || !strings.Contains(pushes[1], `"sentAt":"20`) {
		t.Errorf("push args %q", pushes)
	}
	if n := o.Stats.Pushes("OrderPlaced"); n != 2 {
		t.Errorf("pushes counted %d, want 2", n)
	}
	if got := r.classes("push OrderPlaced"); len(got) != 2 {
		t.Errorf("push latency recorded %d times, want 2 (number and timestamp)", len(got))
	}
	waiter.Close()

	// The hub evicts us with an error and allowReconnect.
	_, err = c.Invoke(ctx, "Bye")
	<-c.Done()
	d := c.Disconnect()
	if d.Reason != ws.ServerClose || d.Class != sample.ServerError || !strings.Contains(d.Text, "restaurant closed") || !d.AllowReconnect {
		t.Errorf("disconnect %+v", d)
	}
	if err == nil {
		t.Error("Bye returned no error")
	}
	for _, name := range []string{"invoke add", "stream count", "invoke JoinRestaurant", "send PlaceOrderAt"} {
		if got := r.classes(name); len(got) != 1 || got[0] != sample.OK {
			t.Errorf("%s recorded %v", name, got)
		}
	}
}

// TestMsgPackNegotiateNeedsBinary: a server offering WebSockets for text
// only cannot carry MessagePack; negotiate says so.
func TestMsgPackNegotiateNeedsBinary(t *testing.T) {
	o := msgpackOptions()
	noLeak(t, o)
	ts := rawHub(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"negotiateVersion":1,"connectionId":"c","connectionToken":"t","availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}`))
	}, func(context.Context, *websocket.Conn, []byte) {})
	e := connectErr(t, ts, o)
	if e.Phase != "negotiate" || !strings.Contains(e.Msg, "WebSockets(Binary) for the messagepack hub protocol") {
		t.Errorf("%+v", e)
	}
}

// mp encodes a hub message for the raw hubs below, framed.
func mp(t testing.TB, v ...any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return frame(b)
}

func frame(body []byte) []byte {
	return appendFrame(append(make([]byte, maxVarint), body...))
}

func writeBin(ctx context.Context, c *websocket.Conn, b []byte) {
	c.Write(ctx, websocket.MessageBinary, b)
}

// mpConnected opens a MessagePack connection to a raw hub that answers
// the handshake with hello (nil: the plain answer) and runs script.
func mpConnected(t *testing.T, o *Options, hello []byte, script func(ctx context.Context, c *websocket.Conn)) *Conn {
	t.Helper()
	ts := rawHub(t, nil, func(ctx context.Context, c *websocket.Conn, hs []byte) {
		if string(hs) != `{"protocol":"messagepack","version":1}`+"\x1e" {
			c.Close(websocket.StatusProtocolError, "bad handshake")
			return
		}
		if hello == nil {
			hello = []byte("{}\x1e")
		}
		writeBin(ctx, c, hello)
		script(ctx, c)
	})
	c, err := Connect(ctx5(t), ts.URL+"/hub", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMsgPackSplitAcrossFrames: messages arrive cut at every point —
// inside the length prefix, inside the body, several in one WebSocket
// message, the first in the same message as the handshake answer — and
// each is read once, whole. The push is large enough for a two-byte
// length prefix.
func TestMsgPackSplitAcrossFrames(t *testing.T) {
	o := msgpackOptions()
	noLeak(t, o)
	big := strings.Repeat("x", 300)
	push := mp(t, 1, map[string]any{}, nil, "OrderPlaced", []any{map[string]any{"note": big}})
	if push[1]&0x80 != 0 || push[0]&0x80 == 0 {
		t.Fatalf("test push has a %x prefix, want two bytes", push[:2])
	}
	var stream []byte
	for i := 0; i < 3; i++ {
		stream = append(stream, push...)
	}
	stream = append(stream, mp(t, 6)...)
	hello := append([]byte("{}\x1e"), push...)
	args := make(chan string, 8)
	o.OnPush = func(_ *Conn, target string, a json.RawMessage) { args <- string(a) }
	c := mpConnected(t, o, hello, func(ctx context.Context, c *websocket.Conn) {
		// Cut after byte 1 (inside the prefix), mid-body, and across
		// message boundaries.
		for _, cut := range [][2]int{{0, 1}, {1, 150}, {150, len(push) + 2}, {len(push) + 2, len(stream)}} {
			writeBin(ctx, c, stream[cut[0]:cut[1]])
		}
		drain(ctx, c)
	})
	deadline := time.Now().Add(5 * time.Second)
	for o.Stats.Pushes("OrderPlaced") < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := o.Stats.Pushes("OrderPlaced"); n != 4 {
		t.Errorf("pushes %d, want 4", n)
	}
	for i := 0; i < 4; i++ {
		select {
		case a := <-args:
			if a != `[{"note":"`+big+`"}]` {
				t.Errorf("push args %.60q", a)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("push %d not handed on", i)
		}
	}
	if d := c.Disconnect(); d != nil {
		t.Errorf("ended: %v", d)
	}
	c.Close()
}

// TestMsgPackHostile: a hostile or broken server ends the connection as a
// protocol error that says what was wrong, without buffering what it
// announces.
func TestMsgPackHostile(t *testing.T) {
	o := msgpackOptions()
	noLeak(t, o)
	cases := []struct {
		name   string
		script func(ctx context.Context, c *websocket.Conn)
		reason ws.Reason
		msg    string
	}{
		{"truncated varint then close", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, []byte{0x80, 0x80})
			c.Close(websocket.StatusNormalClosure, "")
		}, ws.ProtocolError, "connection ended inside a MessagePack message: 2 bytes of an incomplete frame"},
		{"truncated body then close", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, mp(t, 6, map[string]any{}, "abc")[:4])
			c.Close(websocket.StatusNormalClosure, "")
		}, ws.ProtocolError, "connection ended inside a MessagePack message: 4 bytes"},
		{"six-byte varint", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, []byte{0x81, 0x81, 0x81, 0x81, 0x81, 0x01})
			drain(ctx, c)
		}, ws.ProtocolError, "bad MessagePack length prefix"},
		{"varint over 2^31-1", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
			drain(ctx, c)
		}, ws.ProtocolError, "bad MessagePack length prefix"},
		{"oversize length, few bytes", func(ctx context.Context, c *websocket.Conn) {
			// 100 MB announced, 3 bytes sent: refused at the prefix.
			writeBin(ctx, c, []byte{0x80, 0xc2, 0xd7, 0x2f, 0x91, 0x06})
			drain(ctx, c)
		}, ws.ProtocolError, "MessagePack message of 100000000 bytes declared, over the limit of 1048576"},
		{"not an array", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, frame([]byte{0xa3, 'a', 'b', 'c'}))
			drain(ctx, c)
		}, ws.ProtocolError, "bad MessagePack hub message a3616263"},
		{"array with huge declared length", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, frame([]byte{0x94, 0x01, 0x80, 0xc0, 0xa1, 'T', 0xdd, 0x7f, 0xff, 0xff, 0xff}))
			drain(ctx, c)
		}, ws.ProtocolError, "bad MessagePack hub message"},
		{"empty message", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, []byte{0x00})
			drain(ctx, c)
		}, ws.ProtocolError, "empty MessagePack message"},
		{"close with error", func(ctx context.Context, c *websocket.Conn) {
			writeBin(ctx, c, mp(t, 7, "Server is shutting down.", true))
			drain(ctx, c)
		}, ws.ServerClose, "signalr: server closed the connection: Server is shutting down. (reconnect allowed)"},
	}
	for _, tc := range cases {
		c := mpConnected(t, o, nil, tc.script)
		d := waitDone(t, c)
		if d.Reason != tc.reason || !strings.Contains(d.Text, tc.msg) {
			t.Errorf("%s: %+v", tc.name, d)
		}
		if tc.name == "close with error" && !d.AllowReconnect {
			t.Errorf("%s: allowReconnect lost", tc.name)
		}
	}
}

// TestMsgPackKeepAliveAndClientResult: our keep-alive pings are binary
// MessagePack Pings, and a server invocation awaiting a client result is
// answered with a MessagePack Completion carrying an error.
func TestMsgPackKeepAliveAndClientResult(t *testing.T) {
	o := msgpackOptions()
	o.KeepAlive = 20 * time.Millisecond
	noLeak(t, o)
	var pings atomic.Int32
	answer := make(chan []byte, 1)
	c := mpConnected(t, o, nil, func(ctx context.Context, c *websocket.Conn) {
		writeBin(ctx, c, mp(t, 1, map[string]any{}, "s1", "GetStatus", []any{}))
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			switch {
			case typ == websocket.MessageBinary && bytes.Equal(b, []byte{0x02, 0x91, 0x06}):
				pings.Add(1)
			case typ == websocket.MessageBinary:
				select {
				case answer <- b:
				default:
				}
			}
		}
	})
	select {
	case b := <-answer:
		want := mp(t, 3, map[string]any{}, "s1", 1, "Client didn't provide a result.")
		if !bytes.Equal(b, want) {
			t.Errorf("answer %x, want %x", b, want)
		}
	case <-time.After(5 * time.Second):
		t.Error("no answer")
	}
	deadline := time.Now().Add(5 * time.Second)
	for pings.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pings.Load() < 2 {
		t.Errorf("%d binary pings", pings.Load())
	}
	c.Close()
}

func TestMsgPackTimeAt(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 2, 3, 4e6, time.UTC)
	args, _ := msgpack.Marshal([]any{map[string]any{"sentAt": at, "ms": at.UnixMilli(), "s": "1795914123004", "f": 1.5, "x": true}, []any{7, at}})
	for _, tc := range []struct {
		path []string
		want time.Time
		ok   bool
	}{
		{[]string{"0", "sentAt"}, at, true},
		{[]string{"0", "ms"}, at, true},
		{[]string{"0", "s"}, time.UnixMilli(1795914123004), true},
		{[]string{"1", "1"}, at, true},
		{[]string{"0", "x"}, time.Time{}, false},
		{[]string{"0", "nope"}, time.Time{}, false},
		{[]string{"2"}, time.Time{}, false},
		{[]string{"1", "0", "deeper"}, time.Time{}, false},
	} {
		got, ok := msgpackTimeAt(args, tc.path)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%v: %v %v", tc.path, got, ok)
		}
	}
}

func TestMsgPackToJSON(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"a": []any{1, -2, 3.5, "s", nil, true, []byte{1, 2}}})
	j, err := MsgPackToJSON(b)
	if err != nil || string(j) != `{"a":[1,-2,3.5,"s",null,true,"AQI="]}` {
		t.Errorf("%s %v", j, err)
	}
	// Integer keys (a .NET Dictionary<int,...>) become JSON text keys.
	b, _ = msgpack.Marshal(map[int]string{5: "five"})
	if j, err := MsgPackToJSON(b); err != nil || string(j) != `{"5":"five"}` {
		t.Errorf("%s %v", j, err)
	}
	deep := append(bytes.Repeat([]byte{0x91}, 10000), 0xc0)
	if _, err := MsgPackToJSON(deep); err == nil {
		t.Error("10000 nested arrays converted")
	}
}

// FuzzMsgPackFrames feeds arbitrary bytes to the frame splitter, the
// message parser and the whole read path of a MessagePack connection.
func FuzzMsgPackFrames(f *testing.F) {
	for _, s := range [][]byte{
		mp(f, 6),
		append(mp(f, 1, map[string]any{}, nil, "OrderPlaced", []any{map[string]any{"sentAt": 1}}), mp(f, 3, map[string]any{}, "1", 3, 5)...),
		mp(f, 2, map[string]any{}, "1", []any{1, 2}),
		mp(f, 3, map[string]any{}, "1", 1, "boom"),
		mp(f, 7, "x", true),
		mp(f, 7, map[string]any{}, "x", true),
		append(mp(f, 8, 9), mp(f, 9, 9)...),
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		{0xff, 0xff, 0xff, 0xff, 0x0f},
		frame([]byte{0x91, 0xd4, 0xff, 0x00}),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		total := 0
		rest, err := SplitFrames(data, 1<<20, func(msg []byte) error {
			total += len(msg)
			m, err := ParseMsgPack(msg)
			if err == nil && m.Type <= 0 {
				t.Fatalf("message without a type accepted")
			}
			if err == nil && len(m.Arguments) > 0 {
				MsgPackToJSON(m.Arguments)
				msgpackTimeAt(m.Arguments, []string{"0", "sentAt"})
			}
			if len(m.Result) > 0 {
				MsgPackToJSON(m.Result)
			}
			return nil
		})
		if err == nil && total+len(rest) > len(data) {
			t.Fatalf("split out more bytes than came in")
		}
		// The whole handler path must not panic either.
		c := &Conn{o: &Options{Stats: NewStats("OrderPlaced"), Protocol: MessagePack, TimestampPath: []string{"0", "sentAt"}}, handshaken: true}
		c.Message(nil, ws.Binary, data)
	})
}

// TestMsgPackHostileLengths: values declaring more bytes than their message
// holds are refused without allocating what they declare (the library
// allocates up to 1 MB for such a length before finding it short, so a
// server sending small frames could make every one cost a megabyte).
func TestMsgPackHostileLengths(t *testing.T) {
	str32 := []byte{0xdb, 0x7f, 0xff, 0xff, 0xff, 'x'}
	for name, msg := range map[string][]byte{
		"target":         append([]byte{0x95, 0x01, 0x80, 0xc0}, str32...),
		"argument":       append(append([]byte{0x95, 0x01, 0x80, 0xc0, 0xa1, 'T', 0x91}, str32...), 0x90),
		"stream item":    append([]byte{0x94, 0x02, 0x80, 0xa1, '1'}, str32...),
		"binary result":  {0x95, 0x03, 0x80, 0xa1, '1', 0x03, 0xc6, 0x7f, 0xff, 0xff, 0xff},
		"extension":      {0x95, 0x03, 0x80, 0xa1, '1', 0x03, 0xc9, 0x7f, 0xff, 0xff, 0xff, 0xff},
		"headers":        {0x94, 0x02, 0xdf, 0x7f, 0xff, 0xff, 0xff},
		"nested too far": append(append([]byte{0x94, 0x02, 0x80, 0xa1, '1'}, bytes.Repeat([]byte{0x91}, 300)...), 0xc0),
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ParseMsgPack(msg)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("%s: %d bytes allocated to refuse a %d-byte message", name, n, len(msg))
		}
	}
	if _, err := MsgPackToJSON(str32); err == nil {
		t.Error("conversion accepted a cut string")
	}
	if _, ok := msgpackTimeAt(append([]byte{0x91}, str32...), []string{"0"}); ok {
		t.Error("time read from a cut string")
	}
}
