package signalr

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/jsonpath"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// rawHub is a misbehaving hub written for these tests: negotiate answers
// with neg (nil: a normal v1 answer), the socket reads the handshake and
// then behaves as script says.
func rawHub(t *testing.T, neg http.HandlerFunc, script func(ctx context.Context, c *websocket.Conn, hs []byte)) *httptest.Server {
	t.Helper()
	if neg == nil {
		neg = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"negotiateVersion":1,"connectionId":"cid","connectionToken":"tok","availableTransports":[{"transport":"WebSockets","transferFormats":["Text","Binary"]}]}`))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hub/negotiate", neg)
	mux.HandleFunc("GET /hub", func(w http.ResponseWriter, r *http.Request) {
		lastWSQuery.Store(r.URL.RawQuery)
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(32 << 20)
		_, hs, err := c.Read(r.Context())
		if err != nil {
			return
		}
		script(r.Context(), c, hs)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// lastWSQuery is the query of the last socket a raw hub accepted (tests
// here do not run in parallel).
var lastWSQuery atomic.Value

func write(ctx context.Context, c *websocket.Conn, s string) {
	c.Write(ctx, websocket.MessageText, []byte(s))
}

// drain reads until the client goes, so the server's socket stays up.
func drain(ctx context.Context, c *websocket.Conn) {
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
	}
}

func connectErr(t *testing.T, ts *httptest.Server, o *Options) *Error {
	t.Helper()
	c, err := Connect(ctx5(t), ts.URL+"/hub", nil, o)
	if err == nil {
		c.Abort()
		t.Fatal("connected")
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("not an *Error: %T %v", err, err)
	}
	return e
}

func TestNegotiateFailures(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	answer := func(code int, ct, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.WriteHeader(code)
			w.Write([]byte(body))
		}
	}
	cases := []struct {
		name  string
		neg   http.HandlerFunc
		class sample.Class
		msg   string
	}{
		// A proxy's login page or a SPA fallback instead of the hub.
		{"html", answer(200, "text/html; charset=utf-8", "<!doctype html><html>hi</html>"), sample.Other, "negotiate: expected JSON, got text/html"},
		{"garbage json", answer(200, "application/json", "{nope"), sample.Protocol, "negotiate: malformed JSON: invalid character 'n'"},
		{"429", answer(429, "", ""), sample.RateLimited, "negotiate: 429 Too Many Requests"},
		{"503", answer(503, "text/plain", "down"), sample.ServerError, "negotiate: 503 Service Unavailable"},
		{"404", answer(404, "", ""), sample.ClientError, "negotiate: 404 Not Found"},
		{"error field", answer(200, "application/json", `{"error":"This connection is not allowed."}`), sample.Other, "negotiate: server error: This connection is not allowed."},
		{"no id", answer(200, "application/json", `{"negotiateVersion":1,"availableTransports":[]}`), sample.Protocol, "Missing required property 'connectionId'."},
		{"long polling only", answer(200, "application/json",
			`{"negotiateVersion":1,"connectionId":"a","connectionToken":"b","availableTransports":[{"transport":"LongPolling","transferFormats":["Text","Binary"]},{"transport":"ServerSentEvents","transferFormats":["Text"]}]}`),
			sample.Other, "unsupported transport: server offers LongPolling(Text,Binary), ServerSentEvents(Text)"},
		{"redirect loop", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"url":"http://` + r.Host + `/hub"}`))
		}, sample.Other, "more than 100 redirects"},
	}
	for _, tc := range cases {
		ts := rawHub(t, tc.neg, func(context.Context, *websocket.Conn, []byte) {})
		e := connectErr(t, ts, o)
		if e.Class != tc.class || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("%s: %v (%v)", tc.name, e, e.Class)
		}
	}
}

// TestNegotiateV0 checks that a server answering version 0 (no
// connectionToken) gets its connectionId back as id.
func TestNegotiateV0(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	ts := rawHub(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"connectionId":"v0-id","availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}`))
	}, func(ctx context.Context, c *websocket.Conn, hs []byte) {
		write(ctx, c, "{}\x1e")
		drain(ctx, c)
	})
	c, err := Connect(ctx5(t), ts.URL+"/hub", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if q := lastWSQuery.Load(); q != "id=v0-id" {
		t.Errorf("socket query %v", q)
	}
}

func TestUpgrade404(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"negotiateVersion":1,"connectionId":"a","connectionToken":"b","availableTransports":[{"transport":"WebSockets","transferFormats":["Text"]}]}`))
			return
		}
		http.NotFound(w, r) // the connection token is unknown
	}))
	defer ts.Close()
	e := connectErr(t, ts, o)
	if e.Phase != "upgrade" || e.Class != sample.ClientError || !strings.Contains(e.Msg, "404") {
		t.Errorf("%v (%v)", e, e.Class)
	}
}

func TestHandshakeFailures(t *testing.T) {
	o := testOptions()
	o.HandshakeTimeout = 150 * time.Millisecond
	noLeak(t, o)
	cases := []struct {
		name   string
		script func(ctx context.Context, c *websocket.Conn, hs []byte)
		class  sample.Class
		msg    string
	}{
		{"refused", func(ctx context.Context, c *websocket.Conn, hs []byte) {
			write(ctx, c, `{"error":"Requested protocol 'json' is not available."}`+"\x1e")
			drain(ctx, c)
		}, sample.Other, "handshake: server refused: Requested protocol 'json' is not available."},
		{"silent", func(ctx context.Context, c *websocket.Conn, hs []byte) {
			drain(ctx, c)
		}, sample.Timeout, "handshake: no answer within 150ms"},
		{"not json", func(ctx context.Context, c *websocket.Conn, hs []byte) {
			write(ctx, c, "hello\x1e")
			drain(ctx, c)
		}, sample.Protocol, "handshake: invalid handshake response"},
		{"closed", func(ctx context.Context, c *websocket.Conn, hs []byte) {
			c.Close(websocket.StatusPolicyViolation, "go away")
		}, sample.Other, "connection ended before the handshake answer"},
	}
	for _, tc := range cases {
		ts := rawHub(t, nil, tc.script)
		e := connectErr(t, ts, o)
		if e.Class != tc.class || !strings.Contains(e.Error(), tc.msg) {
			t.Errorf("%s: %v (%v)", tc.name, e, e.Class)
		}
	}
}

// connected opens a connection to a raw hub that completes the handshake
// and then runs script.
func connected(t *testing.T, o *Options, script func(ctx context.Context, c *websocket.Conn)) *Conn {
	t.Helper()
	ts := rawHub(t, nil, func(ctx context.Context, c *websocket.Conn, hs []byte) {
		if string(hs) != `{"protocol":"json","version":1}`+"\x1e" {
			c.Close(websocket.StatusProtocolError, "bad handshake")
			return
		}
		write(ctx, c, "{}\x1e")
		script(ctx, c)
	})
	c, err := Connect(ctx5(t), ts.URL+"/hub", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitDone(t *testing.T, c *Conn) *ws.Disconnect {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("connection still open")
	}
	return c.Disconnect()
}

// TestPingTimeout: the server completes the handshake and goes silent;
// our pings keep going out but nothing comes back.
func TestPingTimeout(t *testing.T) {
	o := testOptions()
	o.KeepAlive = 30 * time.Millisecond
	o.ServerTimeout = 200 * time.Millisecond
	r := &rec{}
	o.Recorder = r
	noLeak(t, o)
	var pings atomic.Int32
	ts := rawHub(t, nil, func(ctx context.Context, c *websocket.Conn, hs []byte) {
		write(ctx, c, "{}\x1e")
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if string(b) == "{\"type\":6}\x1e" {
				pings.Add(1)
			}
		}
	})
	err := Hold(context.Background(), ts.URL+"/hub", nil, o, nil)
	d, ok := err.(*ws.Disconnect)
	if !ok || d.Reason != ws.PingTimeout || d.Class != sample.Timeout || !strings.Contains(d.Text, "200ms") {
		t.Fatalf("hold: %v", err)
	}
	if pings.Load() < 3 {
		t.Errorf("only %d keep-alive pings in 200ms at 30ms", pings.Load())
	}
	if got := r.classes("session"); len(got) != 1 || got[0] != sample.Timeout {
		t.Errorf("session %v", got)
	}
	if o.Stats.Disconnects[ws.PingTimeout].Load() != 1 {
		t.Error("ping timeout not counted")
	}
}

// TestServerPingsKeepAlive: server pings (and Ack/Sequence, which we must
// parse and ignore) count as life.
func TestServerPingsKeepAlive(t *testing.T) {
	o := testOptions()
	o.ServerTimeout = 150 * time.Millisecond
	noLeak(t, o)
	c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
		for i := 0; i < 8; i++ {
			write(ctx, c, `{"type":6}`+"\x1e"+`{"type":8,"sequenceId":3}`+"\x1e")
			write(ctx, c, `{"type":9,"sequenceId":4}`+"\x1e"+`{"type":42}`+"\x1e")
			time.Sleep(50 * time.Millisecond)
		}
		write(ctx, c, `{"type":1,"target":"OrderPlaced","arguments":[{"id":1}]}`+"\x1e")
		drain(ctx, c)
	})
	deadline := time.Now().Add(5 * time.Second)
	for o.Stats.Pushes("OrderPlaced") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if d := c.Disconnect(); d != nil {
		t.Fatalf("ended: %v", d)
	}
	c.Close()
}

func TestBadMessages(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	cases := []struct {
		name   string
		script func(ctx context.Context, c *websocket.Conn)
		reason ws.Reason
		class  sample.Class
		msg    string
	}{
		{"no record separator then close", func(ctx context.Context, c *websocket.Conn) {
			write(ctx, c, `{"type":1,"target":"OrderPlaced","arguments":[]}`)
			c.Close(websocket.StatusNormalClosure, "")
		}, ws.ProtocolError, sample.Other, "connection ended inside a record: 48 bytes without a 0x1E separator"},
		{"10 MB message", func(ctx context.Context, c *websocket.Conn) {
			big := bytes.Repeat([]byte("x"), 10<<20)
			c.Write(ctx, websocket.MessageText, append(append([]byte(`{"type":1,"target":"T","arguments":["`), big...), `"]}`+"\x1e"...))
			drain(ctx, c)
		}, ws.ProtocolError, sample.Other, "message larger than the read limit of 1048576 bytes"},
		{"not json", func(ctx context.Context, c *websocket.Conn) {
			write(ctx, c, "<html>\x1e")
			drain(ctx, c)
		}, ws.ProtocolError, sample.Protocol, "signalr: bad hub message \"<html>\""},
		{"close with error", func(ctx context.Context, c *websocket.Conn) {
			write(ctx, c, `{"type":7,"error":"Server is shutting down.","allowReconnect":true}`+"\x1e")
			drain(ctx, c)
		}, ws.ServerClose, sample.ServerError, "signalr: server closed the connection: Server is shutting down."},
		{"close without error", func(ctx context.Context, c *websocket.Conn) {
			write(ctx, c, `{"type":7}`+"\x1e")
			drain(ctx, c)
		}, ws.ServerClose, sample.ServerClose, "signalr: server sent Close"},
		{"tcp reset", func(ctx context.Context, c *websocket.Conn) {
			c.CloseNow()
		}, ws.NetworkReset, sample.ConnReset, "without a close frame"},
	}
	for _, tc := range cases {
		c := connected(t, o, tc.script)
		d := waitDone(t, c)
		if d.Reason != tc.reason || d.Class != tc.class || !strings.Contains(d.Text, tc.msg) {
			t.Errorf("%s: %+v", tc.name, d)
		}
	}
}

// TestCloseMidInvocation: the connection drops while an invocation awaits
// its Completion; the invocation fails with the disconnect's class at once
// instead of waiting for its timeout.
func TestCloseMidInvocation(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
		c.Read(ctx) // the invocation
		c.CloseNow()
	})
	t0 := time.Now()
	_, err := c.Invoke(ctx5(t), "PlaceOrder", "1", 2)
	e, ok := err.(*Error)
	if !ok || e.Class != sample.ConnReset || !strings.Contains(e.Msg, "PlaceOrder: connection ended before its Completion") || time.Since(t0) > 2*time.Second {
		t.Fatalf("%v", err)
	}
}

// TestSplitRecord: a record split across two WebSocket messages is joined.
func TestSplitRecord(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
		write(ctx, c, `{"type":1,"target":"Order`)
		write(ctx, c, `Placed","arguments":[]}`+"\x1e")
		drain(ctx, c)
	})
	deadline := time.Now().Add(5 * time.Second)
	for o.Stats.Pushes("OrderPlaced") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if o.Stats.Pushes("OrderPlaced") != 1 {
		t.Error("split record not joined")
	}
	c.Close()
}

// TestClientResult: a server invoking the client with an invocationId gets
// a Completion with an error rather than waiting forever.
func TestClientResult(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	got := make(chan string, 1)
	c := connected(t, o, func(ctx context.Context, c *websocket.Conn) {
		write(ctx, c, `{"type":1,"invocationId":"s1","target":"GetStatus","arguments":[]}`+"\x1e")
		_, b, _ := c.Read(ctx)
		got <- string(b)
		drain(ctx, c)
	})
	select {
	case b := <-got:
		if b != `{"type":3,"invocationId":"s1","error":"Client didn't provide a result."}`+"\x1e" {
			t.Errorf("answer %q", b)
		}
	case <-time.After(5 * time.Second):
		t.Error("no answer")
	}
	c.Close()
}

func FuzzParseMessages(f *testing.F) {
	for _, s := range []string{
		"{}\x1e",
		`{"type":1,"target":"OrderPlaced","arguments":[{"sentAt":1}]}` + "\x1e",
		`{"type":3,"invocationId":"1","result":5}` + "\x1e" + `{"type":6}` + "\x1e",
		`{"type":2,"invocationId":"1","item":[1,2]}` + "\x1e",
		`{"type":7,"error":"x","allowReconnect":true}` + "\x1e",
		`{"type":8,"sequenceId":9}` + "\x1e" + `{"type":9,"sequenceId":9}` + "\x1e",
		`{"type":1,"target":"x"`,
		"\x1e\x1e\x1e",
		`{"type":"1"}` + "\x1e",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		rest, err := SplitRecords(data, func(rec []byte) error {
			n++
			if bytes.IndexByte(rec, RS) >= 0 {
				t.Fatalf("record contains a separator")
			}
			ParseHandshake(rec)
			m, err := ParseMessage(rec)
			if err == nil && m.Type == 0 {
				t.Fatalf("message without a type accepted")
			}
			if err == nil && len(m.Arguments) > 0 {
				jsonpath.Lookup(m.Arguments, []string{"0", "sentAt"})
			}
			return nil
		})
		if err != nil || bytes.IndexByte(rest, RS) >= 0 {
			t.Fatalf("rest %q err %v", rest, err)
		}
		if n != bytes.Count(data, []byte{RS}) {
			t.Fatalf("%d records for %d separators", n, bytes.Count(data, []byte{RS}))
		}
		// The whole handler path must not panic either.
		c := &Conn{o: &Options{Stats: NewStats("x")}, handshaken: true}
		c.Message(nil, ws.Text, data)
	})
}
