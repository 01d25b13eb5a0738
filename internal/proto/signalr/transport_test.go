package signalr

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/philippseith/signalr"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSSEAgainstHub: the third-party hub offering Server-Sent Events only;
// calls, streams and timed group pushes all work over events and POSTs.
func TestSSEAgainstHub(t *testing.T) {
	noLeak(t, nil)
	ts := hubServer(t, nil, signalr.HTTPTransports(signalr.TransportServerSentEvents))
	hub := ts.URL + "/hubs/kitchen"
	for _, want := range []Transport{ServerSentEvents, Auto} {
		o := testOptions()
		o.Transport = want
		o.TimestampPath = []string{"0", "sentAt"}
		r := &rec{}
		o.Recorder = r
		ctx := ctx5(t)
		c, err := Connect(ctx, hub, nil, o)
		if err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		if c.Transport() != ServerSentEvents || o.Stats.Transports[ServerSentEvents].Load() != 1 || o.Stats.Fallbacks.Load() != 0 {
			t.Errorf("%s: on %s, by transport %v", want, c.Transport(), o.Stats.ByTransport())
		}
		if res, err := c.Invoke(ctx, "add", 2, 3); err != nil || string(res) != "5" {
			t.Fatalf("%s: add: %s %v", want, res, err)
		}
		var items []string
		if n, err := c.Stream(ctx, "count", []any{3}, func(it json.RawMessage) { items = append(items, string(it)) }); err != nil || n != 3 || strings.Join(items, ",") != "0,1,2" {
			t.Errorf("%s: stream %d %v %v", want, n, items, err)
		}
		if _, err := c.Invoke(ctx, "JoinRestaurant", "4"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Invoke(ctx, "PlaceOrder", "4", 1); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the push", func() bool { return o.Stats.Pushes("OrderPlaced") == 1 })
		if got := r.classes("push OrderPlaced"); len(got) != 1 {
			t.Errorf("%s: push latency %v", want, got)
		}
		if got := r.classes("sse open"); len(got) != 1 || got[0] != sample.OK {
			t.Errorf("%s: sse open %v", want, got)
		}
		if got := r.classes("upgrade"); len(got) != 0 {
			t.Errorf("%s: a WebSocket was tried: %v", want, got)
		}
		c.Close()
		if d := c.Disconnect(); d.Reason != ws.ClientClose || d.Class != sample.OK {
			t.Errorf("%s: close %+v", want, d)
		}
		if o.Stats.MsgsIn.Load() < 4 || o.Stats.MsgsOut.Load() < 4 {
			t.Errorf("%s: messages in %d out %d", want, o.Stats.MsgsIn.Load(), o.Stats.MsgsOut.Load())
		}
		o.HTTPClient.CloseIdleConnections()
	}
}

// TestAutoFallsBackWhenWebSocketsBlocked: a proxy refuses WebSocket
// upgrades though the hub offers them; auto counts the failed upgrade and
// a fallback, negotiates again and connects over Server-Sent Events.
func TestAutoFallsBackWhenWebSocketsBlocked(t *testing.T) {
	noLeak(t, nil)
	ts := hubServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
				http.Error(w, "no websockets here", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		})
	}, signalr.HTTPTransports(signalr.TransportWebSockets, signalr.TransportServerSentEvents))
	o := testOptions()
	o.Transport = Auto
	r := &rec{}
	o.Recorder = r
	c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Transport() != ServerSentEvents || o.Stats.Fallbacks.Load() != 1 {
		t.Errorf("transport %s, fallbacks %d", c.Transport(), o.Stats.Fallbacks.Load())
	}
	if got := r.classes("upgrade"); len(got) != 1 || got[0] != sample.ClientError {
		t.Errorf("upgrade %v, want one client_error", got)
	}
	if got := r.classes("negotiate"); len(got) != 2 {
		t.Errorf("negotiate %v, want two", got)
	}
	if res, err := c.Invoke(ctx5(t), "add", 1, 1); err != nil || string(res) != "2" {
		t.Errorf("add: %s %v", res, err)
	}
	// Told to use WebSockets only, the same hub is a failed upgrade.
	o2 := testOptions()
	if c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o2); err == nil {
		c.Close()
		t.Error("websockets through the blocking proxy connected")
	}
}

func lpHub(t *testing.T, h *sigtest.Hub) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/hub"
}

// TestLongPolling, in both hub protocols, against the spec-written hub:
// calls, group pushes, polls counted as operations of their own, the
// server's Close with allowReconnect, and a DELETE on our close.
func TestLongPolling(t *testing.T) {
	noLeak(t, nil)
	for _, proto := range []Protocol{JSON, MessagePack} {
		h := &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 200 * time.Millisecond}
		hub := lpHub(t, h)
		for _, want := range []Transport{LongPolling, Auto} {
			o := testOptions()
			o.Protocol, o.Transport = proto, want
			o.TimestampPath = []string{"0", "sentAt"}
			r := &rec{}
			o.Recorder = r
			ctx := ctx5(t)
			c, err := Connect(ctx, hub, nil, o)
			if err != nil {
				t.Fatalf("%s/%s: %v", proto, want, err)
			}
			if c.Transport() != LongPolling {
				t.Errorf("%s/%s: on %s", proto, want, c.Transport())
			}
			if res, err := c.Invoke(ctx, "Add", 20, 22); err != nil || string(res) != "42" {
				t.Fatalf("%s/%s: add: %s %v", proto, want, res, err)
			}
			_, err = c.Invoke(ctx, "Nope")
			if e, ok := err.(*Error); !ok || e.Class != sample.ServerError || !strings.Contains(e.Msg, "Unknown hub method") {
				t.Errorf("%s/%s: nope: %v", proto, want, err)
			}
			if res, err := c.Invoke(ctx, "JoinRestaurant", json.RawMessage(`"9"`)); err != nil || string(res) != `"joined 9"` {
				t.Fatalf("%s/%s: join: %s %v", proto, want, res, err)
			}
			before := h.Pushes.Load()
			for i := 0; i < 3; i++ {
				h.PlaceOrder("9", i)
			}
			waitFor(t, "three pushes", func() bool { return o.Stats.Pushes("OrderPlaced") == 3 })
			if h.Pushes.Load()-before != 3 {
				t.Errorf("hub pushed %d", h.Pushes.Load()-before)
			}
			if got := r.classes("push OrderPlaced"); len(got) != 3 {
				t.Errorf("%s/%s: push latency %v", proto, want, got)
			}
			// Idle polls come back empty at the hold's end and are polled
			// again.
			polls := len(r.classes("poll"))
			waitFor(t, "idle polls", func() bool { return len(r.classes("poll")) >= polls+2 })
			for _, cl := range r.classes("poll") {
				if cl != sample.OK {
					t.Errorf("%s/%s: poll %s", proto, want, cl)
				}
			}
			if c.Disconnect() != nil {
				t.Fatalf("%s/%s: ended: %v", proto, want, c.Disconnect())
			}
			open := h.Open()
			c.Close()
			if d := c.Disconnect(); d.Reason != ws.ClientClose {
				t.Errorf("%s/%s: close %+v", proto, want, d)
			}
			waitFor(t, "the DELETE", func() bool { return h.Open() == open-1 })

			// The hub evicts a connection with allowReconnect.
			c, err = Connect(ctx, hub, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			c.Invoke(ctx, "Bye")
			<-c.Done()
			if d := c.Disconnect(); d.Reason != ws.ServerClose || !d.AllowReconnect || !strings.Contains(d.Text, "restaurant closed (reconnect allowed)") {
				t.Errorf("%s/%s: bye %+v", proto, want, d)
			}
			o.HTTPClient.CloseIdleConnections()
		}
	}
}

// TestAutoAgainstSingleTransportHubs: auto connects to a hub offering only
// Server-Sent Events and to one offering only long polling, and a
// MessagePack client skips SSE, which cannot carry binary.
func TestAutoAgainstSingleTransportHubs(t *testing.T) {
	noLeak(t, nil)
	sse := lpHub(t, &sigtest.Hub{Transports: []string{"ServerSentEvents"}})
	lp := lpHub(t, &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: time.Second})
	both := lpHub(t, &sigtest.Hub{Transports: []string{"ServerSentEvents", "LongPolling"}, PollHold: time.Second})
	for _, tc := range []struct {
		hub   string
		proto Protocol
		want  Transport
	}{
		{sse, JSON, ServerSentEvents},
		{lp, JSON, LongPolling},
		{lp, MessagePack, LongPolling},
		{both, JSON, ServerSentEvents},
		{both, MessagePack, LongPolling},
	} {
		o := testOptions()
		o.Protocol, o.Transport = tc.proto, Auto
		c, err := Connect(ctx5(t), tc.hub, nil, o)
		if err != nil {
			t.Fatalf("%s → %s: %v", tc.proto, tc.want, err)
		}
		if res, err := c.Invoke(ctx5(t), "Add", 1, 2); err != nil || string(res) != "3" {
			t.Errorf("%s → %s: add %s %v", tc.proto, tc.want, res, err)
		}
		if c.Transport() != tc.want {
			t.Errorf("%s: on %s, want %s", tc.proto, c.Transport(), tc.want)
		}
		c.Close()
		o.HTTPClient.CloseIdleConnections()
	}
	// MessagePack over SSE only: negotiate says why not.
	o := msgpackOptions()
	o.Transport = Auto
	_, err := Connect(ctx5(t), sse, nil, o)
	if e, ok := err.(*Error); !ok || !strings.Contains(e.Msg, "unsupported transport: server offers ServerSentEvents(Text); this scenario needs a transport with Binary for the messagepack hub protocol") {
		t.Errorf("%v", err)
	}
}

// TestHostileHTTPTransports: an event stream whose line never ends is cut
// at the size limit; polls that never return are bounded by the server
// timeout.
func TestHostileHTTPTransports(t *testing.T) {
	noLeak(t, nil)
	o := testOptions()
	o.Transport = ServerSentEvents
	o.MaxMessage = 64 << 10
	hub := lpHub(t, &sigtest.Hub{Transports: []string{"ServerSentEvents"}, EndlessSSELine: true})
	_, err := Connect(ctx5(t), hub, nil, o)
	if e, ok := err.(*Error); !ok || e.Phase != "handshake" || !strings.Contains(e.Msg, "server-sent event line over the size limit") {
		t.Errorf("endless line: %v", err)
	}
	o.HTTPClient.CloseIdleConnections()

	o = testOptions()
	o.Transport = LongPolling
	o.ServerTimeout = 300 * time.Millisecond
	o.KeepAlive = -1
	r := &rec{}
	o.Recorder = r
	h := &sigtest.Hub{Transports: []string{"LongPolling"}, NeverAnswerPolls: true}
	hub = lpHub(t, h)
	// The handshake answer comes on the first poll, answered at once;
	// every later poll is held for ever.
	c, err := Connect(ctx5(t), hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a poll that never returns held the connection")
	}
	if d := c.Disconnect(); d.Reason != ws.PingTimeout || d.Class != sample.Timeout {
		t.Errorf("never-answered poll: %+v", d)
	}
	o.HTTPClient.CloseIdleConnections()
}

func TestSSEParser(t *testing.T) {
	stream := ": hello\r\n\r\ndata: a\r\ndata:b\n\nevent: x\rdata: c\r\rid: 7\ndata\n\ndata: \n\n:tail"
	var want = []string{"a\nb", "c", "", ""}
	// Every cut into two chunks gives the same events.
	for cut := 0; cut <= len(stream); cut++ {
		p := &sseParser{max: 1 << 10}
		var got []string
		fn := func(d []byte) error { got = append(got, string(d)); return nil }
		if err := p.feed([]byte(stream[:cut]), fn); err != nil {
			t.Fatal(err)
		}
		if err := p.feed([]byte(stream[cut:]), fn); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("cut %d: %q", cut, got)
		}
	}
	p := &sseParser{max: 8}
	if err := p.feed([]byte("data: 0123456789"), func([]byte) error { return nil }); err == nil {
		t.Error("line over the limit accepted")
	}
	p = &sseParser{max: 8}
	err := p.feed([]byte("data: 12\ndata: 34\ndata: 56\ndata: 78\n"), func([]byte) error { return nil })
	if err == nil {
		t.Error("event over the limit accepted")
	}
}

// FuzzSSE feeds arbitrary streams to the event-stream parser in two
// chunks: no panic, events never larger than the limit, and the cut never
// changes the events.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "data: {\"type\":6}\x1e\r\n\r\n", ":\r\n\r\n", "data\r\rdata: x\ny\n\n", "data: " + strings.Repeat("z", 300)} {
		f.Add([]byte(s), uint16(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		events := func(chunks ...[]byte) ([]string, error) {
			p := &sseParser{max: 256}
			var out []string
			for _, c := range chunks {
				if err := p.feed(c, func(d []byte) error {
					if len(d) > 256 {
						t.Fatalf("event of %d bytes", len(d))
					}
					out = append(out, string(d))
					return nil
				}); err != nil {
					return out, err
				}
			}
			return out, nil
		}
		whole, err1 := events(data)
		k := int(cut) % (len(data) + 1)
		split, err2 := events(data[:k], data[k:])
		if (err1 == nil) != (err2 == nil) || (err1 == nil && strings.Join(whole, "\x00") != strings.Join(split, "\x00")) {
			t.Fatalf("whole %q %v, split at %d %q %v", whole, err1, k, split, err2)
		}
		for _, e := range whole {
			if bytes.ContainsAny([]byte(e), "\r") {
				t.Fatalf("event %q holds a CR", e)
			}
		}
		// The whole SSE read path of a connection must not panic either.
		c := &Conn{o: &Options{Stats: NewStats("x")}, handshaken: true}
		p := &sseParser{max: 1 << 10}
		p.feed(data, func(d []byte) error { return c.Message(nil, ws.Text, d) })
	})
}

// TestLongPollingCloseRace: the server forgets the connection as soon as
// our Close message arrives and answers the poll that was already on its
// way with 404 before it answers the Close POST. That poll is the end we
// asked for, not a failed poll (it was counted as a client_error poll
// before).
func TestLongPollingCloseRace(t *testing.T) {
	noLeak(t, nil)
	var mu sync.Mutex
	polls, closed := 0, false
	pollNow := make(chan struct{}, 1)
	sawPoll := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/negotiate"):
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"negotiateVersion":1,"connectionId":"c","connectionToken":"t","availableTransports":[{"transport":"LongPolling","transferFormats":["Text","Binary"]}]}`))
		case r.Method == http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			if bytes.Contains(b, []byte(`"protocol"`)) {
				select {
				case pollNow <- struct{}{}:
				default:
				}
				return
			}
			if bytes.Contains(b, []byte(`{"type":7}`)) {
				mu.Lock()
				closed = true
				mu.Unlock()
				// Answer the held poll with a ping; the next one
				// gets 404, and only then this POST its 200.
				pollNow <- struct{}{}
				select {
				case <-sawPoll:
				case <-time.After(5 * time.Second):
				}
			}
		case r.Method == http.MethodGet:
			mu.Lock()
			polls++
			first, gone := polls == 1, closed
			mu.Unlock()
			if gone {
				http.Error(w, "no such connection", http.StatusNotFound)
				select {
				case sawPoll <- struct{}{}:
				default:
				}
				return
			}
			if first {
				return
			}
			select {
			case <-pollNow:
				mu.Lock()
				msg := "{}\x1e"
				if polls > 2 {
					msg = `{"type":6}` + "\x1e"
				}
				mu.Unlock()
				w.Write([]byte(msg))
			case <-r.Context().Done():
			}
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	o := testOptions()
	o.Transport = LongPolling
	r := &rec{}
	o.Recorder = r
	c, err := Connect(ctx5(t), srv.URL+"/hub", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if d := c.Disconnect(); d.Reason != ws.ClientClose || d.Class != sample.OK {
		t.Errorf("close: %+v", d)
	}
	for _, cl := range r.classes("poll") {
		if cl != sample.OK {
			t.Errorf("polls %v, errors %v", r.classes("poll"), r.errs)
		}
	}
	o.HTTPClient.CloseIdleConnections()
}

// TestSSEOverTLS: with no HTTP client given, the event stream and the
// sends use a client of their own, which must trust the plan's CA as
// negotiate does.
func TestSSEOverTLS(t *testing.T) {
	ts := startHub(t, httptest.NewTLSServer, nil, signalr.HTTPTransports(signalr.TransportServerSentEvents))
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	o := &Options{TLS: &tls.Config{RootCAs: roots}, Transport: ServerSentEvents, Stats: NewStats()}
	defer o.CloseIdleConnections()
	c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res, err := c.Invoke(ctx5(t), "add", 2, 2); err != nil || string(res) != "4" || c.Transport() != ServerSentEvents {
		t.Errorf("add over TLS SSE: %s %v on %s", res, err, c.Transport())
	}
}
