package conn

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/result"
)

// shortPlan is an example plan pointed at url and cut to about 5 seconds,
// with edit applied to its signalr section.
func shortPlan(t *testing.T, example, url, edit string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(e2etest.ModRoot, "examples", example))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "target: demo", "target: "+url, 1)
	s = strings.Replace(s, "{duration: 13s, users: 20}", "{duration: 3s, users: 20}", 1)
	s = strings.Replace(s, "      url: /hubs/kitchen\n", "      url: /hubs/kitchen\n"+edit, 1)
	if !strings.Contains(s, "duration: 3s") || !strings.Contains(s, "target: "+url) || edit != "" && !strings.Contains(s, edit) {
		t.Fatalf("examples/%s changed shape; update shortPlan", example)
	}
	path := filepath.Join(t.TempDir(), example)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// exactPushes runs plan against the demo at url and checks that every
// push the hub sent was counted and timed, over the wanted protocol and
// transport.
func exactPushes(t *testing.T, url, plan, proto, transport string) (*result.Result, e2etest.Outcome) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "res.json")
	o := e2etest.Stampede(t, 60*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	hub := hubStats(t, url)
	cs := conns(t, r, "kitchen-display")
	if cs.Opened != 40 || cs.Failed != 0 || cs.PeakOpen != 40 || cs.OpenAtEnd != 40 || len(cs.Disconnects) != 0 {
		t.Errorf("connections: %+v", cs)
	}
	if cs.HubProtocol != proto || cs.Transports[transport] != 40 || len(cs.Transports) != 1 || cs.Fallbacks != 0 {
		t.Errorf("hub protocol %q, transports %v, fallbacks %d; want %s over %s for all 40", cs.HubProtocol, cs.Transports, cs.Fallbacks, proto, transport)
	}
	orders := step(t, r, "customer", "POST order")
	pushes := cs.Pushes["OrderPlaced"]
	// A push the hub library had not written when a display closed at
	// the end it drops, so the count is exact against what it wrote. A
	// WebSocket close reads until the hub's answer, which follows every
	// push written before it; an event stream is cut at the close, so
	// there what was in flight may go unread.
	exact := pushes == int64(hub.Written)
	if transport != "websockets" {
		exact = pushes <= int64(hub.Written)
	}
	if orders.Successful == 0 || uint64(orders.Successful) != hub.Orders || !exact || hub.Written > hub.Pushes || hub.Pushes != 2*uint64(orders.Successful) {
		t.Errorf("orders %d (hub %d), pushes counted %d, hub wrote %d of %d", orders.Successful, hub.Orders, pushes, hub.Written, hub.Pushes)
	}
	lat := step(t, r, "kitchen-display", "push OrderPlaced")
	if lat.Successful != pushes || lat.LatencyOK.Count != pushes {
		t.Errorf("push latency: %+v", lat)
	}
	want := fmt.Sprintf("Hub protocol %s; transports: %s 40", proto, transport)
	if !strings.Contains(o.Stdout, want) {
		t.Errorf("summary lacks %q\n%s", want, o.Stdout)
	}
	return r, o
}

// The MessagePack variant of the restaurants example against `stampede
// demo` (philippseith/signalr speaks MessagePack): binary WebSocket
// messages, every push counted and timed from its MessagePack sentAt.
func TestRestaurantsMessagePack(t *testing.T) {
	url := demoProcess(t)
	r, _ := exactPushes(t, url, shortPlan(t, "restaurants-msgpack.yaml", url, ""), "messagepack", "websockets")
	for _, name := range []string{"negotiate", "upgrade", "handshake", "invoke JoinRestaurant"} {
		if s := step(t, r, "kitchen-display", name); s.Successful != 40 || s.Failed != 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
}

// The restaurants example over Server-Sent Events against `stampede demo`
// (philippseith/signalr serves SSE alongside WebSockets; auto would pick
// WebSockets there, so SSE is asked for by name).
func TestRestaurantsServerSentEvents(t *testing.T) {
	url := demoProcess(t)
	r, _ := exactPushes(t, url, shortPlan(t, "restaurants.yaml", url, "      transport: sse\n"), "json", "sse")
	if s := step(t, r, "kitchen-display", "sse open"); s.Successful != 40 || s.Failed != 0 {
		t.Errorf("sse open: %+v", s)
	}
}

// transportPlan is a kitchen-display population against a hub served in
// this test, with the given protocol and transport.
func transportPlan(t *testing.T, url, proto, transport string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.yaml")
	os.WriteFile(path, []byte(`
target: `+url+`
tenants: {count: 3}
scenarios:
  display:
    per_tenant: 2
    signalr:
      url: /hub
      protocol: `+proto+`
      transport: `+transport+`
      keep_alive: 500ms
      invoke:
        - {method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 5s}
        - {method: Add, args: [40, 2], timeout: 5s}
      listen: [OrderPlaced]
      timestamp: "0.sentAt"
load: {stages: [{duration: 3s, users: 1}]}
thresholds: ["invoke Add: error_rate < 1%"]
`), 0o644)
	return path
}

// Long polling and Server-Sent Events offered alone, through the binary:
// no third-party Go server here speaks long polling, so the hub is
// sigtest's, written from the aspnetcore transport spec. auto must find
// the one transport each hub offers, in both hub protocols where the
// transport can carry them; long polls are counted as operations of their
// own; every push the hub sent is counted.
func TestAutoAgainstSingleTransportHubs(t *testing.T) {
	for _, tc := range []struct {
		offer, proto, transport, want string
	}{
		{"LongPolling", "json", "auto", "long_polling"},
		{"LongPolling", "messagepack", "auto", "long_polling"},
		{"ServerSentEvents", "json", "auto", "sse"},
		{"LongPolling", "messagepack", "long_polling", "long_polling"},
	} {
		t.Run(tc.offer+"/"+tc.proto+"/"+tc.transport, func(t *testing.T) {
			h := &sigtest.Hub{Transports: []string{tc.offer}, PollHold: 300 * time.Millisecond, KeepAlive: time.Second}
			srv := httptest.NewServer(h)
			defer srv.Close()
			defer h.Close()
			stop := make(chan struct{})
			defer close(stop)
			// Orders keep coming to restaurant 1 while the run lasts.
			go func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						h.PlaceOrder("1", i)
					}
				}
			}()
			plan := transportPlan(t, srv.URL, tc.proto, tc.transport)
			out := filepath.Join(t.TempDir(), "res.json")
			o := e2etest.Stampede(t, 60*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q")
			if o.Code != 0 {
				t.Fatalf("want exit 0\n%s", o)
			}
			r := e2etest.ReadResult(t, out)
			cs := conns(t, r, "display")
			if cs.Opened != 6 || cs.Failed != 0 || cs.Transports[tc.want] != 6 || cs.HubProtocol != tc.proto {
				t.Errorf("connections %+v", cs)
			}
			for _, name := range []string{"invoke JoinRestaurant", "invoke Add"} {
				if s := step(t, r, "display", name); s.Successful != 6 || s.Failed != 0 {
					t.Errorf("%s: %+v", name, s)
				}
			}
			if pushes := cs.Pushes["OrderPlaced"]; pushes < 10 || pushes > h.Pushes.Load() {
				t.Errorf("pushes counted %d, hub sent %d", pushes, h.Pushes.Load())
			}
			if tc.want == "long_polling" {
				poll := step(t, r, "display", "poll")
				if poll.Failed != 0 || poll.Successful < 6*3 || poll.Successful > h.Polls.Load() {
					t.Errorf("polls: %+v, hub answered %d", poll, h.Polls.Load())
				}
			}
			if !strings.Contains(o.Stdout, fmt.Sprintf("Hub protocol %s; transports: %s 6", tc.proto, tc.want)) {
				t.Errorf("summary:\n%s", o.Stdout)
			}
		})
	}
}

// A hub that evicts every connection with a Close message allowing
// reconnects, through the binary over long polling: each eviction is a
// server_close disconnect whose message says reconnecting is allowed,
// and stampede connects again after its reconnect delay.
func TestHubClosesWithAllowReconnect(t *testing.T) {
	h := &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 300 * time.Millisecond}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	dir := t.TempDir()
	plan := filepath.Join(dir, "bye.yaml")
	os.WriteFile(plan, []byte(`
target: `+srv.URL+`
scenarios:
  display:
    users: 2
    signalr:
      url: /hub
      transport: long_polling
      invoke: [{method: Bye, timeout: 5s}]
      reconnect: 200ms
load: {stages: [{duration: 2s, users: 1}]}
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 60*time.Second, dir, "run", plan, "-o", out, "-q")
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "display")
	if cs.Opened < 4 || cs.Failed != 0 || cs.Disconnects["server_close"] != cs.Opened-cs.OpenAtEnd {
		t.Errorf("connections %+v", cs)
	}
	bye := step(t, r, "display", "invoke Bye")
	var allowed int64
	for _, e := range bye.Errors {
		if strings.Contains(e.Message, "restaurant closed (reconnect allowed)") {
			allowed += e.Count
		}
	}
	if bye.Failed < cs.Opened-cs.OpenAtEnd || allowed != bye.Failed {
		t.Errorf("invoke Bye: %+v\n%s", bye, o)
	}
}
