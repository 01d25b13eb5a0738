package ws

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

// The peers here are coder/websocket servers: a second, independent
// implementation, so a framing mistake on our side cannot be mirrored by
// the test server.

func noLeak(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// echoServer echoes every message; "close:<code>" makes it close with that
// code, "drop" cuts the TCP connection, "silent" stops answering, "deaf"
// stops reading for 600ms.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"chat.v1"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(32 << 20)
		ctx := r.Context()
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			switch string(b) {
			case "close:1011":
				c.Close(websocket.StatusInternalError, "boom")
				return
			case "close:1000":
				c.Close(websocket.StatusNormalClosure, "bye")
				return
			case "drop":
				return // CloseNow: no close frame
			case "deaf":
				// Stop reading for a while, so a close frame sent now
				// goes unanswered until the client gives up waiting.
				time.Sleep(600 * time.Millisecond)
				continue
			case "big":
				c.Write(ctx, websocket.MessageText, make([]byte, 2<<20))
				continue
			case "silent":
				// Keep reading (so the socket stays up) but never write.
				for {
					if _, _, err := c.Read(ctx); err != nil {
						return
					}
				}
			}
			if err := c.Write(ctx, typ, b); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func dial(t *testing.T, url string, o *Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, nil, o, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

func TestEchoWaitForClose(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	ct := &Counters{}
	o := &Options{Subprotocols: []string{"chat.v1"}, Counters: ct}
	c := dial(t, srv.URL, o)
	if c.Subprotocol() != "chat.v1" {
		t.Errorf("subprotocol %q", c.Subprotocol())
	}
	if c.Timing.Upgrade <= 0 || c.Timing.TCP <= 0 || c.Timing.TCP > c.Timing.Upgrade {
		t.Errorf("timing %+v", c.Timing)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Registered before sending, so the echo cannot slip past.
	w := c.Expect(JSONEquals("order.id", "42"))
	if err := c.Send(Text, []byte(`{"order":{"id":"41"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(Text, []byte(`{"order":{"id":"42","n":1}}`)); err != nil {
		t.Fatal(err)
	}
	got, err := w.Wait(ctx)
	if err != nil || !strings.Contains(string(got), `"n":1`) {
		t.Fatalf("wait: %q %v", got, err)
	}

	// Numbers compare by their JSON text; regex on the raw message.
	w = c.Expect(Matcher{Path: []string{"seq"}, Equals: "7"})
	if err := c.Send(Binary, []byte(`{"seq":7}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	w = c.Expect(Matcher{Regex: regexp.MustCompile(`^PONG \d+$`)})
	if err := c.Send(Text, []byte("PONG 99")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	// Nothing matches: a timeout, classified.
	sctx, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = c.WaitFor(sctx, JSONEquals("never", "x"))
	scancel()
	if Classify(err) != sample.Timeout || !errors.Is(err, ErrWaitTimeout) {
		t.Errorf("wait timeout: %v (%v)", err, Classify(err))
	}

	c.Close(1000, "done")
	d := c.Disconnect()
	if d == nil || d.Reason != ClientClose || d.Class != sample.OK {
		t.Errorf("disconnect %+v", d)
	}
	if ct.MsgsOut.Load() != 4 || ct.MsgsIn.Load() != 4 || ct.BytesIn.Load() != ct.BytesOut.Load() {
		t.Errorf("counters out %d in %d bytes %d/%d", ct.MsgsOut.Load(), ct.MsgsIn.Load(), ct.BytesOut.Load(), ct.BytesIn.Load())
	}
	if err := c.Send(Text, []byte("late")); Classify(err) != sample.OK || err == nil {
		// A send after our own close fails, but it is not a load failure.
		if err == nil {
			t.Error("send after close succeeded")
		}
	}
}

func TestBacklog(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	c := dial(t, srv.URL, &Options{Backlog: 2})
	defer c.Close(1000, "")
	for _, m := range []string{`{"a":1}`, `{"a":2}`, `{"a":3}`} {
		c.Send(Text, []byte(m))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// All three echoes arrive with no waiter registered; the bound of 2
	// pushes out the oldest.
	time.Sleep(200 * time.Millisecond)
	for _, v := range []string{"3", "2"} {
		if _, err := c.WaitFor(ctx, JSONEquals("a", v)); err != nil {
			t.Fatalf("a=%s: %v", v, err)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer scancel()
	if _, err := c.WaitFor(sctx, JSONEquals("a", "1")); Classify(err) != sample.Timeout {
		t.Errorf("a=1 should have been dropped: %v", err)
	}
}

// broadcastServer relays every message to every other client.
func broadcastServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	peers := map[*websocket.Conn]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		mu.Lock()
		peers[c] = true
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(peers, c)
			mu.Unlock()
		}()
		for {
			typ, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			mu.Lock()
			for p := range peers {
				if p != c {
					p.Write(r.Context(), typ, b)
				}
			}
			mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBroadcast(t *testing.T) {
	noLeak(t)
	srv := broadcastServer(t)
	o := &Options{}
	var conns []*Conn
	var waits []*Waiter
	for i := 0; i < 5; i++ {
		c := dial(t, srv.URL, o)
		conns = append(conns, c)
	}
	// Every server-side handler must have registered before the send.
	time.Sleep(100 * time.Millisecond)
	for _, c := range conns[1:] {
		waits = append(waits, c.Expect(JSONEquals("event", "OrderPlaced")))
	}
	conns[0].Send(Text, []byte(`{"event":"OrderPlaced","order":1}`))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, w := range waits {
		if _, err := w.Wait(ctx); err != nil {
			t.Errorf("peer %d: %v", i+1, err)
		}
	}
	for _, c := range conns {
		c.Close(1000, "")
	}
}

func TestServerCloseCodes(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	cases := []struct {
		send   string
		reason Reason
		class  sample.Class
		code   int
	}{
		{"close:1011", ServerClose, sample.ServerError, 1011}, // internal error: the server's fault
		{"close:1000", ServerClose, sample.ConnReset, 1000},   // normal close we did not ask for
		{"drop", NetworkReset, sample.ConnReset, 0},           // no close frame at all
	}
	for _, tc := range cases {
		c := dial(t, srv.URL, &Options{})
		c.Send(Text, []byte(tc.send))
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still open", tc.send)
		}
		d := c.Disconnect()
		if d.Reason != tc.reason || d.Class != tc.class || d.Code != tc.code {
			t.Errorf("%s: got %+v", tc.send, d)
		}
		// A waiter on a dead connection fails with the connection's class.
		if _, err := c.WaitFor(context.Background(), Matcher{}); Classify(err) != tc.class {
			t.Errorf("%s: wait after end: %v", tc.send, err)
		}
	}
}

func TestReadLimit(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	c := dial(t, srv.URL, &Options{ReadLimit: 1 << 20})
	c.Send(Text, []byte("big"))
	<-c.Done()
	d := c.Disconnect()
	if d.Reason != ProtocolError || d.Class != sample.Other || !strings.Contains(d.Text, "read limit of 1048576") {
		t.Errorf("got %+v", d)
	}
}

func TestKeepAliveAndSilence(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	// WebSocket pings every 50ms; the server's pongs count as life, so
	// the 1s silence limit is never reached in 2.5s. The limit is 20
	// pings long so a loaded machine's late wake-ups (a ping or its pong
	// read 100ms+ late was seen in CI) cannot reach it; without pongs as
	// life it is passed twice over.
	c := dial(t, srv.URL, &Options{KeepAlive: 50 * time.Millisecond, IdleTimeout: time.Second})
	select {
	case <-c.Done():
		t.Fatalf("ended: %v", c.Disconnect())
	case <-time.After(2500 * time.Millisecond):
	}
	c.Close(1000, "")

	// Without keep-alive pings a server that never writes is silent.
	c = dial(t, srv.URL, &Options{IdleTimeout: 100 * time.Millisecond})
	c.Send(Text, []byte("silent"))
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("silence not detected")
	}
	if d := c.Disconnect(); d.Reason != PingTimeout || d.Class != sample.Timeout {
		t.Errorf("got %+v", d)
	}
}

// TestKeepAliveWhileClosing: keep-alives due while Close waits for the
// peer's close frame must not turn a clean client close into a failed
// write (gorilla refuses writes once the close frame is sent).
func TestKeepAliveWhileClosing(t *testing.T) {
	noLeak(t)
	srv := echoServer(t)
	for _, msg := range [][]byte{nil, []byte("ka")} {
		c := dial(t, srv.URL, &Options{KeepAlive: 10 * time.Millisecond, KeepAliveMessage: msg, CloseTimeout: 300 * time.Millisecond})
		if err := c.Send(Text, []byte("deaf")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		c.Close(1000, "")
		if d := c.Disconnect(); d.Reason != ClientClose || d.Class != sample.OK {
			t.Errorf("keep-alive %q: closed as %+v, want client_close", msg, d)
		}
		if err := c.Send(Text, []byte("late")); err == nil {
			t.Error("send after close succeeded")
		}
	}
}

func TestDialFailures(t *testing.T) {
	noLeak(t)
	status := func(code int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			w.Write([]byte("<html>nope</html>"))
		}))
		t.Cleanup(s.Close)
		return s
	}
	refused := "ws://" + hostile.Refused(t)
	// A listener that never answers the upgrade.
	hang, _ := net.Listen("tcp", "127.0.0.1:0")
	defer hang.Close()
	var held []net.Conn
	var hmu sync.Mutex
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			hmu.Lock()
			held = append(held, c)
			hmu.Unlock()
		}
	}()
	defer func() {
		hmu.Lock()
		for _, c := range held {
			c.Close()
		}
		hmu.Unlock()
	}()
	cases := []struct {
		name  string
		url   string
		class sample.Class
		msg   string
	}{
		{"refused", refused, sample.ConnRefused, "refused"},
		{"429", status(429).URL, sample.RateLimited, "429 Too Many Requests"},
		{"503", status(503).URL, sample.ServerError, "503 Service Unavailable"},
		{"404", status(404).URL, sample.ClientError, "404 Not Found"},
		{"200", status(200).URL, sample.Other, "expected 101 Switching Protocols, got 200 OK"},
		{"hang", "ws://" + hang.Addr().String(), sample.Timeout, "timed out"},
	}
	for _, tc := range cases {
		_, err := Dial(context.Background(), tc.url, nil, &Options{ConnectTimeout: 200 * time.Millisecond}, nil)
		if Classify(err) != tc.class || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v (%v)", tc.name, err, Classify(err))
		}
	}
}
