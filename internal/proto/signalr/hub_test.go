package signalr

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"
	"github.com/philippseith/signalr"
	"go.uber.org/goleak"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// kitchen is the seed's hub in miniature, served by philippseith/signalr,
// a third-party Go implementation of the ASP.NET Core server side.
type kitchen struct{ signalr.Hub }

func (h *kitchen) JoinRestaurant(id string) string {
	h.Groups().AddToGroup("r"+id, h.ConnectionID())
	return "joined " + id
}

// PlaceOrder pushes OrderPlaced to the restaurant's kitchen displays with
// the send time, as a restaurant-ordering API would.
func (h *kitchen) PlaceOrder(id string, order int) {
	h.Clients().Group("r"+id).Send("OrderPlaced", map[string]any{"order": order, "sentAt": time.Now().UnixMilli()})
}

func (h *kitchen) Add(a, b int) int { return a + b }

func (h *kitchen) Fail() int { panic("kitchen on fire") }

func (h *kitchen) Count(n int) <-chan int {
	ch := make(chan int)
	go func() {
		defer close(ch)
		for i := 0; i < n; i++ {
			ch <- i
		}
	}()
	return ch
}

// Bye makes the server close the connection with an error, as a hub does
// when it evicts a client.
func (h *kitchen) Bye() {
	h.Close("restaurant closed", true)
}

func hubLogger() kitlog.Logger {
	if os.Getenv("HUBDEBUG") != "" {
		return kitlog.NewLogfmtLogger(os.Stderr)
	}
	return kitlog.NewNopLogger()
}

// hubServer serves the kitchen hub at /hubs/kitchen on 127.0.0.1.
func hubServer(t testing.TB, wrap func(http.Handler) http.Handler, opts ...func(signalr.Party) error) *httptest.Server {
	t.Helper()
	return startHub(t, httptest.NewServer, wrap, opts...)
}

// startHub serves the kitchen hub with start (httptest.NewServer or
// NewTLSServer).
func startHub(t testing.TB, start func(http.Handler) *httptest.Server, wrap func(http.Handler) http.Handler, opts ...func(signalr.Party) error) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts = append([]func(signalr.Party) error{
		signalr.SimpleHubFactory(&kitchen{}),
		signalr.Logger(hubLogger(), os.Getenv("HUBDEBUG") != ""),
		signalr.KeepAliveInterval(2 * time.Second),
		signalr.TimeoutInterval(30 * time.Second),
	}, opts...)
	srv, err := signalr.NewServer(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.MapHTTP(signalr.WithHTTPServeMux(mux), "/hubs/kitchen")
	var h http.Handler = mux
	if wrap != nil {
		h = wrap(mux)
	}
	ts := start(h)
	t.Cleanup(func() {
		cancel()
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts
}

// noLeak checks at test end that no goroutine survived, ours or the
// negotiate client's.
func noLeak(t *testing.T, o *Options) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if o != nil && o.HTTPClient != nil {
			o.HTTPClient.CloseIdleConnections()
		}
		goleak.VerifyNone(t, opt,
			// The third-party server's own loops wind down on their own
			// schedule after its context ends; they are not ours.
			goleak.IgnoreAnyFunction("github.com/philippseith/signalr.(*httpMux).reaperLoop"),
		)
	})
}

func testOptions() *Options {
	return &Options{HTTPClient: &http.Client{Transport: &http.Transport{}}, Stats: NewStats("OrderPlaced")}
}

type rec struct {
	mu   sync.Mutex
	seen map[string][]sample.Class
	errs map[string]string
	durs map[string]time.Duration
}

func (r *rec) Record(op Op, class sample.Class, d time.Duration, err error) {
	name := op.String()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen, r.errs, r.durs = map[string][]sample.Class{}, map[string]string{}, map[string]time.Duration{}
	}
	r.seen[name] = append(r.seen[name], class)
	r.durs[name] = d
	if err != nil {
		r.errs[name] = err.Error()
	}
}

func (r *rec) classes(name string) []sample.Class {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sample.Class(nil), r.seen[name]...)
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestInvokeCompletionStream(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	r := &rec{}
	o.Recorder = r
	ts := hubServer(t, nil)
	ctx := ctx5(t)
	c, err := Connect(ctx, ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.ConnectionID() == "" || c.Timing.Negotiate <= 0 || c.Timing.Upgrade <= 0 || c.Timing.Handshake <= 0 {
		t.Errorf("id %q timing %+v", c.ConnectionID(), c.Timing)
	}
	res, err := c.Invoke(ctx, "add", 2, 3)
	if err != nil || string(res) != "5" {
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
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := c.Disconnect(); d.Reason != 1 /* ClientClose */ || d.Class != sample.OK {
		t.Errorf("close: %+v", d)
	}
	for _, name := range []string{"negotiate", "upgrade", "handshake", "invoke add", "stream count"} {
		if got := r.classes(name); len(got) != 1 || got[0] != sample.OK {
			t.Errorf("%s recorded %v", name, got)
		}
	}
	if got := r.classes("invoke fail"); len(got) != 1 || got[0] != sample.ServerError {
		t.Errorf("invoke fail recorded %v", got)
	}
	if o.Stats.Open.Load() != 0 || o.Stats.Opened.Load() != 1 || o.Stats.Disconnects[1].Load() != 1 {
		t.Errorf("stats open %d opened %d", o.Stats.Open.Load(), o.Stats.Opened.Load())
	}
}

func TestGroupBroadcastPush(t *testing.T) {
	o := testOptions()
	o.TimestampPath = []string{"0", "sentAt"}
	r := &rec{}
	o.Recorder = r
	noLeak(t, o)
	ts := hubServer(t, nil)
	ctx := ctx5(t)
	hub := ts.URL + "/hubs/kitchen"

	// Two kitchen displays, restaurants 7 and 8; a waiter app orders for 7.
	k7, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	k7.On("OrderPlaced", func(args json.RawMessage) { got <- string(args) })
	k8, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	for k, id := range map[*Conn]string{k7: "7", k8: "8"} {
		if res, err := k.Invoke(ctx, "JoinRestaurant", id); err != nil || string(res) != `"joined `+id+`"` {
			t.Fatalf("join %s: %s %v", id, res, err)
		}
	}
	waiter, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := waiter.Invoke(ctx, "PlaceOrder", "7", 1); err != nil {
		t.Fatal(err)
	}
	// Fire-and-forget: no invocationId, no Completion, same push.
	if err := waiter.Send("PlaceOrder", "7", 2); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		select {
		case a := <-got:
			if !strings.Contains(a, `"sentAt"`) {
				t.Errorf("push args %s", a)
			}
		case <-ctx.Done():
			t.Fatalf("push %d never came", i)
		}
	}
	// Give a wrong-group push time to show up if it were going to.
	time.Sleep(100 * time.Millisecond)
	if n := o.Stats.Pushes("OrderPlaced"); n != 2 {
		t.Errorf("pushes counted %d, want 2 (restaurant 8 must get none)", n)
	}
	if got := r.classes("push OrderPlaced"); len(got) != 2 {
		t.Errorf("push latency recorded %d times", len(got))
	}
	if got := r.classes("send PlaceOrder"); len(got) != 1 || got[0] != sample.OK {
		t.Errorf("send recorded %v", got)
	}
	if o.Stats.MsgsIn.Load() == 0 || o.Stats.BytesOut.Load() == 0 {
		t.Error("message counters did not move")
	}
	for _, c := range []*Conn{k7, k8, waiter} {
		c.Close()
	}
}

func TestServerInitiatedClose(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	ts := hubServer(t, nil)
	ctx := ctx5(t)
	c, err := Connect(ctx, ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	// The server closes while our invocation of Bye awaits its Completion.
	_, err = c.Invoke(ctx, "Bye")
	<-c.Done()
	d := c.Disconnect()
	if d.Reason != 2 /* ServerClose */ || d.Class != sample.ServerError || !strings.Contains(d.Text, "restaurant closed") || !d.AllowReconnect {
		t.Errorf("disconnect %+v", d)
	}
	if err == nil || !strings.Contains(err.Error(), "restaurant closed") {
		t.Errorf("invoke during close: %v", err)
	}
	if o.Stats.Disconnects[2].Load() != 1 || o.Stats.Open.Load() != 0 {
		t.Errorf("disconnect not counted")
	}
}

func TestHold(t *testing.T) {
	o := testOptions()
	r := &rec{}
	o.Recorder = r
	noLeak(t, o)
	ts := hubServer(t, nil)
	hub := ts.URL + "/hubs/kitchen"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Hold(ctx, hub, nil, o, []Call{{Method: "JoinRestaurant", Args: []any{"3"}}})
	}()
	// Wait until the display has joined, then order.
	deadline := time.Now().Add(5 * time.Second)
	for len(r.classes("invoke JoinRestaurant")) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	w, err := Connect(ctx5(t), hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	w.Send("PlaceOrder", "3", 9)
	for o.Stats.Pushes("OrderPlaced") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	w.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("hold: %v", err)
	}
	if got := r.classes("session"); len(got) != 1 || got[0] != sample.OK {
		t.Errorf("session %v", got)
	}
	if o.Stats.Pushes("OrderPlaced") != 1 || o.Stats.Open.Load() != 0 {
		t.Errorf("pushes %d open %d", o.Stats.Pushes("OrderPlaced"), o.Stats.Open.Load())
	}
}

// TestRedirect: the app server's negotiate answers with the service URL
// and an access token, as Azure SignalR Service does; the token must be a
// bearer header on the second negotiate and on the socket's upgrade.
func TestRedirect(t *testing.T) {
	o := testOptions()
	noLeak(t, o)
	var mu sync.Mutex
	var sawBearer, sawSocket bool
	svc := hubServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			if strings.HasSuffix(r.URL.Path, "/negotiate") && r.Header.Get("Authorization") == "Bearer svc-token" {
				sawBearer = true
			}
			// The socket's token is in its upgrade's header by default.
			if !strings.HasSuffix(r.URL.Path, "/negotiate") && r.Header.Get("Authorization") == "Bearer svc-token" && r.URL.Query().Get("hub") == "kitchen" {
				sawSocket = true
			}
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer app-token" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"url":"` + svc.URL + `/hubs/kitchen?hub=kitchen","accessToken":"svc-token"}`))
	}))
	defer app.Close()
	o.AccessToken = "app-token"
	c, err := Connect(ctx5(t), app.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res, err := c.Invoke(ctx5(t), "add", 1, 1); err != nil || string(res) != "2" {
		t.Fatalf("invoke through redirect: %s %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !sawBearer || !sawSocket {
		t.Errorf("bearer on negotiate %v, service token on socket %v", sawBearer, sawSocket)
	}
}

func TestSkipNegotiate(t *testing.T) {
	o := testOptions()
	o.SkipNegotiate = true
	noLeak(t, o)
	ts := hubServer(t, nil)
	c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Timing.Negotiate != 0 {
		t.Errorf("negotiate timed without negotiate")
	}
	if _, err := c.Invoke(ctx5(t), "add", 1, 2); err != nil {
		t.Fatal(err)
	}
}

// TestTLSHub connects to a hub served over TLS with its own certificate
// authority: negotiate and the wss upgrade must both trust it, and
// without it the upgrade fails as a TLS failure, not something vaguer.
func TestTLSHub(t *testing.T) {
	ts := startHub(t, httptest.NewTLSServer, nil)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	conf := &tls.Config{RootCAs: roots}
	o := &Options{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: conf}}, TLS: conf, Stats: NewStats()}
	noLeak(t, o)
	c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, o)
	if err != nil {
		t.Fatalf("connect over TLS with the CA: %v", err)
	}
	res, err := c.Invoke(ctx5(t), "JoinRestaurant", "7")
	if err != nil || !strings.Contains(string(res), "joined 7") {
		t.Errorf("invoke over TLS = %s, %v", res, err)
	}
	c.Close()

	// Negotiate trusts the CA, the upgrade does not.
	r := &rec{}
	bad := &Options{HTTPClient: o.HTTPClient, Stats: NewStats(), Recorder: r}
	if c, err := Connect(ctx5(t), ts.URL+"/hubs/kitchen", nil, bad); err == nil {
		c.Close()
		t.Fatal("upgrade without the CA succeeded")
	}
	if got := r.classes("upgrade"); len(got) != 1 || got[0] != sample.TLS {
		t.Errorf("upgrade without the CA recorded %v, want [tls] (errors %v)", got, r.errs)
	}
}

// TestPingTimeoutAgainstHub: the third-party hub, told to ping only once
// an hour, is silent after the handshake; our server timeout ends the
// connection as a ping timeout, and the session says so.
func TestPingTimeoutAgainstHub(t *testing.T) {
	ts := hubServer(t, nil, signalr.KeepAliveInterval(time.Hour))
	o := testOptions()
	o.ServerTimeout = 300 * time.Millisecond
	r := &rec{}
	o.Recorder = r
	noLeak(t, o)
	err := Hold(context.Background(), ts.URL+"/hubs/kitchen", nil, o, nil)
	d, ok := err.(*ws.Disconnect)
	if !ok || d.Reason != ws.PingTimeout || d.Class != sample.Timeout {
		t.Fatalf("hold against a silent hub: %v", err)
	}
	if got := r.classes("session"); len(got) != 1 || got[0] != sample.Timeout {
		t.Errorf("session %v, want [timeout]", got)
	}
	if o.Stats.Disconnects[ws.PingTimeout].Load() != 1 {
		t.Error("ping timeout not counted")
	}
}
