// Package conn runs the real stampede binary with persistent-connection
// scenarios: the restaurants example against `stampede demo` (whose kitchen
// hub is github.com/philippseith/signalr), a hub nobody listens on, and a
// WebSocket script against a coder/websocket server in the test.
package conn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

func TestMain(m *testing.M) { os.Exit(e2etest.Main(m, "e2e/conn")) }

// demoProcess serves `stampede demo` in a process of its own, as a real
// hub would be, and returns its base URL.
func demoProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(e2etest.Bin, "demo", "--addr", "127.0.0.1:0", "--print-url")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(8 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://") {
		t.Fatalf("demo did not start: %q %v", line, err)
	}
	return strings.TrimSpace(line)
}

func hubStats(t *testing.T, url string) *demo.HubStats {
	t.Helper()
	resp, err := http.Get(url + "/__stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st demo.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Kitchen == nil {
		t.Fatal("the demo's kitchen hub was never used")
	}
	return st.Kitchen
}

func step(t *testing.T, r *result.Result, scenario, name string) result.Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.Scenario == scenario && s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s/%s", scenario, name)
	return result.Step{}
}

func conns(t *testing.T, r *result.Result, scenario string) result.ConnScenario {
	t.Helper()
	if r.Connections != nil {
		for _, s := range r.Connections.Scenarios {
			if s.Scenario == scenario {
				var sum int64
				for _, n := range s.ByClass {
					sum += n
				}
				if sum != s.Failed || s.Opened+s.Failed != s.Attempts {
					t.Errorf("%s: attempts %d = opened %d + failed %d? failed = sum of %v?", scenario, s.Attempts, s.Opened, s.Failed, s.ByClass)
				}
				return s
			}
		}
	}
	t.Fatalf("no connection scenario %q in the result", scenario)
	return result.ConnScenario{}
}

// shortExample is examples/restaurants.yaml pointed at url and cut to
// about 5 seconds.
func shortExample(t *testing.T, url string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(e2etest.ModRoot, "examples", "restaurants.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "target: demo", "target: "+url, 1)
	s = strings.Replace(s, "{duration: 13s, users: 20}", "{duration: 3s, users: 20}", 1)
	if s == string(src) || !strings.Contains(s, "duration: 3s") {
		t.Fatal("examples/restaurants.yaml changed shape; update shortExample")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "restaurants.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The restaurants example against a separate `stampede demo` process:
// 40 kitchen displays held, every order pushed to its restaurant's two
// displays, and stampede's push count equal to what the hub sent.
func TestRestaurantsExactPushes(t *testing.T) {
	url := demoProcess(t)
	plan := shortExample(t, url)
	out := filepath.Join(t.TempDir(), "res.json")
	o := e2etest.Stampede(t, 60*time.Second, filepath.Dir(plan), "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	hub := hubStats(t, url)
	cs := conns(t, r, "kitchen-display")
	if cs.Opened != 40 || cs.Failed != 0 || cs.PeakOpen != 40 || cs.Target != 40 {
		t.Errorf("connections: %+v", cs)
	}
	if hub.Peak != 40 {
		t.Errorf("the hub saw at most %d connections at once, want 40", hub.Peak)
	}
	orders := step(t, r, "customer", "POST order")
	if orders.Successful == 0 || orders.Failed != 0 || uint64(orders.Successful) != hub.Orders {
		t.Fatalf("orders: stampede %+v, hub %d", orders, hub.Orders)
	}
	pushes := cs.Pushes["OrderPlaced"]
	// Exact against what the hub wrote: a push the hub library had not
	// written when a display closed at the end it drops (demo.HubStats).
	if pushes != int64(hub.Written) || hub.Written > hub.Pushes {
		t.Errorf("stampede counted %d OrderPlaced pushes, the hub wrote %d of %d", pushes, hub.Written, hub.Pushes)
	}
	// Customers think before ordering, so both displays of a restaurant
	// have joined before its first order.
	if pushes != 2*orders.Successful {
		t.Errorf("pushes %d, want 2 × %d orders", pushes, orders.Successful)
	}
	lat := step(t, r, "kitchen-display", "push OrderPlaced")
	if lat.Successful != pushes || lat.LatencyOK.Count != pushes || lat.LatencyOK.P99US <= 0 {
		t.Errorf("push latency: %+v", lat)
	}
	for _, name := range []string{"negotiate", "upgrade", "handshake", "invoke JoinRestaurant", "session"} {
		if s := step(t, r, "kitchen-display", name); s.Successful != 40 || s.Failed != 0 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	// Open when the run ended, so open at the end and not disconnects:
	// opened = open at the end + disconnects.
	if cs.OpenAtEnd != 40 || len(cs.Disconnects) != 0 {
		t.Errorf("open at end %d, disconnects %v: want 40 open at the end and no disconnects", cs.OpenAtEnd, cs.Disconnects)
	}
	var peak int64
	for _, n := range r.Series.Connections {
		peak = max(peak, n)
	}
	if peak != 40 || len(r.Series.Connections) != len(r.Series.T) {
		t.Errorf("series connections %v", r.Series.Connections)
	}
	for _, want := range []string{
		"Connections:",
		"kitchen-display (signalr): 40 attempts, 40 opened, 0 failed; peak 40 open of 40",
		fmt.Sprintf("Pushes: OrderPlaced %d", pushes),
		"push OrderPlaced: " + fmt.Sprint(pushes) + " total",
		"✓ push OrderPlaced: p99 < 1s",
	} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("summary lacks %q\n%s", want, o.Stdout)
		}
	}
}

// The example exactly as the README runs it, target: demo.
func TestRestaurantsExampleAsShipped(t *testing.T) {
	if testing.Short() {
		t.Skip("15 s run")
	}
	out := filepath.Join(t.TempDir(), "res.json")
	o := e2etest.Stampede(t, 90*time.Second, e2etest.ModRoot, "run", "examples/restaurants.yaml", "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "kitchen-display")
	orders := step(t, r, "customer", "POST order")
	if cs.Opened != 40 || cs.Pushes["OrderPlaced"] != 2*orders.Successful || orders.Successful < 100 {
		t.Errorf("connections %+v, orders %+v", cs, orders)
	}
	if r.Run.DurationS < 14 || r.Run.DurationS > 17 {
		t.Errorf("ran %.1fs, want about 15", r.Run.DurationS)
	}
}

// A hub nobody listens on: every attempt is a conn_refused failure of the
// negotiate step, the counts add up, and the summary says so.
func TestDeadHubClassified(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	dead := hostile.Refused(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "dead.yaml")
	os.WriteFile(plan, []byte(`
target: `+target.URL+`
scenarios:
  display:
    users: 5
    signalr: {url: "http://`+dead+`/hubs/kitchen", reconnect: 250ms}
load: {stages: [{duration: 1500ms, users: 1}]}
thresholds: ["negotiate: error_rate < 1%"]
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 30*time.Second, dir, "run", plan, "-o", out, "-q")
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "display")
	if cs.Opened != 0 || cs.Failed < 10 || cs.ByClass["conn_refused"] != cs.Failed {
		t.Errorf("connections %+v", cs)
	}
	neg := step(t, r, "display", "negotiate")
	if neg.ByClass["conn_refused"] != cs.Failed || neg.Requests != cs.Failed {
		t.Errorf("negotiate %+v, connection failures %d", neg, cs.Failed)
	}
	if !regexp.MustCompile(`display \(signalr\): \d+ attempts, 0 opened, \d+ failed \(\d+ conn refused\)`).MatchString(o.Stdout) {
		t.Errorf("summary does not show the refused connections\n%s", o.Stdout)
	}
	// Thresholds apply to connection steps as to HTTP ones.
	if o.Code != 1 || !strings.Contains(o.Stdout, "✗ negotiate: error_rate < 1% (measured 100.00%)") {
		t.Errorf("want exit 1 and the failed threshold\n%s", o)
	}
}

// echoServer is a coder/websocket server: it answers a join with a
// welcome carrying an id, echoes everything else, and keeps each close.
type echoServer struct {
	mu     sync.Mutex
	closes []string
	// wg counts the handlers: httptest does not wait for hijacked ones.
	wg sync.WaitGroup
}

func (e *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.wg.Add(1)
	defer e.wg.Done()
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"chat.v1"}})
	if err != nil {
		return
	}
	defer c.CloseNow()
	if c.Subprotocol() != "chat.v1" || r.Header.Get("X-Desk") == "" {
		c.Close(4400, "want subprotocol chat.v1 and X-Desk")
		return
	}
	for {
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			var ce websocket.CloseError
			errors.As(err, &ce)
			e.mu.Lock()
			e.closes = append(e.closes, fmt.Sprintf("%d %s", ce.Code, ce.Reason))
			e.mu.Unlock()
			return
		}
		if bytes.Contains(msg, []byte(`"subscribe"`)) {
			msg = []byte(`{"type":"subscribed","id":"sub-` + r.Header.Get("X-Desk") + `"}`)
		}
		if c.Write(r.Context(), typ, msg) != nil {
			return
		}
	}
}

// A WebSocket script end to end: headers and subprotocol on connect, a
// JSON send, a wait with a capture, a send of the capture and a wait for
// its echo, a hold, and a close with code and reason, repeated. The counts
// hold however slowly the machine runs: a connection still connecting or
// running its steps when the run ends finishes them within the grace, so
// every opened connection ran every step once and ended once.
func TestWebSocketScript(t *testing.T) {
	es := &echoServer{}
	srv := httptest.NewServer(es)
	defer srv.Close()
	dir := t.TempDir()
	plan := filepath.Join(dir, "ws.yaml")
	os.WriteFile(plan, []byte(`
target: `+srv.URL+`
tenants: {count: 2}
scenarios:
  desk:
    per_tenant: 2
    websocket:
      url: /feed
      subprotocols: [chat.v1]
      headers: {X-Desk: "{{ vu }}"}
      steps:
        - send: {json: {subscribe: "{{ tenant }}"}}
        - name: subscribed
          wait: {json: type, equals: subscribed, timeout: 10s, capture: {sub: {json: id}}}
        - send: "ack {{ sub }}"
        - name: acked
          wait: {regex: "^ack sub-\\d+$", timeout: 10s}
        - hold: 400ms
        - close: {code: 4001, reason: bye}
load: {stages: [{duration: 2s, users: 1}]}
thresholds: ["subscribed: error_rate < 1%", "acked: p99 < 10s"]
`), 0o644)
	out := filepath.Join(dir, "res.json")
	o := e2etest.Stampede(t, 30*time.Second, dir, "run", plan, "-o", out, "-q")
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	r := e2etest.ReadResult(t, out)
	cs := conns(t, r, "desk")
	// More than 4 opened: at least one desk ran its script again.
	if cs.Failed != 0 || cs.Opened <= 4 || cs.PeakOpen < 1 || cs.PeakOpen > 4 || cs.Disconnects["client_close"] != cs.Opened-cs.OpenAtEnd {
		t.Errorf("connections %+v", cs)
	}
	for _, name := range []string{"upgrade", "send 1", "subscribed", "send 3", "acked", "session"} {
		if s := step(t, r, "desk", name); s.Failed != 0 || s.Successful != cs.Opened {
			t.Errorf("%s: %+v, want all %d opened connections to succeed once", name, s, cs.Opened)
		}
	}
	srv.CloseClientConnections()
	es.wg.Wait()
	es.mu.Lock()
	defer es.mu.Unlock()
	bye := 0
	for _, c := range es.closes {
		if c == "4001 bye" {
			bye++
		}
	}
	// The script's close for every connection the run's end did not close.
	if int64(bye) != cs.Opened-cs.OpenAtEnd || int64(len(es.closes)) != cs.Opened {
		t.Errorf("closes the server saw: %v; connections %+v", es.closes, cs)
	}
	if !strings.Contains(o.Stdout, "desk (websocket):") {
		t.Errorf("summary:\n%s", o.Stdout)
	}
}
