// Command sighub is a lean kitchen hub for the SignalR scale benchmarks
// (bench/signalrscale.sh, bench/sigtransports.sh): the contract of
// `stampede demo`'s hub — /hubs/kitchen with JoinRestaurant (the caller
// joins its restaurant's group), OrderPlaced pushes to a group
// (POST /restaurants/{id}/orders), the open connections at GET /__stats
// as {"kitchen":{"connections":N,...}}, GET /healthz — without the rest of
// the demo (its elections, database pool, upload routes and the counting
// of every byte a hub writes).
//
// Two servers:
//
//   - philippseith (default): github.com/philippseith/signalr, the
//     third-party hub, WebSockets and Server-Sent Events, JSON and
//     MessagePack (the client's handshake chooses).
//   - sigtest: internal/proto/signalr/sigtest, the hub written from the
//     aspnetcore TransportProtocols spec, the only one here that speaks
//     long polling; -transports says what its negotiate offers.
//
// It listens on loopback only, and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // on -pprof only: where a hub's memory goes
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kitlog "github.com/go-kit/log"
	"github.com/philippseith/signalr"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
)

const hubPath = "/hubs/kitchen"

func main() {
	addr := flag.String("addr", "127.0.0.1:8200", "listen address (loopback)")
	server := flag.String("server", "philippseith", "hub implementation: philippseith (WebSockets, SSE) or sigtest (long polling, SSE)")
	transports := flag.String("transports", "LongPolling", "sigtest only: transports its negotiate offers, comma-separated negotiate names")
	maxMsg := flag.Uint("max-message", 4096, "philippseith only: largest hub message accepted, bytes; the library keeps a receive buffer this size per connection")
	timeout := flag.Duration("timeout", 30*time.Second, "philippseith only: a client silent this long is gone (ASP.NET Core's default); "+
		"raise it for idle MessagePack clients (bench/signalrscale.sh does): this library parses their pings late")
	pprof := flag.Bool("pprof", false, "serve /debug/pprof/ as well")
	flag.Parse()

	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("sighub: -addr %q: a loopback address and port, please", *addr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var k kitchen
	switch *server {
	case "philippseith":
		err = k.philippseith(ctx, *maxMsg, *timeout)
	case "sigtest":
		k.sig = &sigtest.Hub{Transports: strings.Split(*transports, ",")}
		k.hub = k.sig
	default:
		err = fmt.Errorf("unknown -server %q", *server)
	}
	if err != nil {
		log.Fatal("sighub: ", err)
	}

	mux := http.NewServeMux()
	mux.Handle(hubPath, k.hub)
	mux.Handle(hubPath+"/", k.hub)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }) // a probe that hung up needs no answer
	mux.HandleFunc("GET /__stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"kitchen": k.stats()}) // a reader that hung up needs no stats
	})
	mux.HandleFunc("POST /restaurants/{id}/orders", func(w http.ResponseWriter, r *http.Request) {
		n := k.placed(r.PathValue("id"))
		fmt.Fprintf(w, "{\"pushed\":%d}\n", n)
	})
	if *pprof {
		mux.Handle("/debug/pprof/", http.DefaultServeMux)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal("sighub: ", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		if k.sig != nil {
			k.sig.Close() // ends its held polls and streams, so Shutdown need not wait for them
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close() // hijacked WebSockets are not Shutdown's to wait for
		}
	}()
	log.Printf("sighub: %s hub at http://%s%s", *server, ln.Addr(), hubPath)
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		log.Fatal("sighub: ", err)
	}
	if k.cancel != nil {
		k.cancel()
	}
}

type kitchen struct {
	hub    http.Handler
	srv    signalr.Server // philippseith
	cancel context.CancelFunc
	sig    *sigtest.Hub // sigtest

	conns, peak    atomic.Int64 // philippseith: OnConnected less OnDisconnected
	orders, pushes atomic.Int64
	seq            atomic.Int64

	// connected and joined count every OnConnected and JoinRestaurant
	// (philippseith), so a run of levels (bench/levelscale.sh) can set
	// each level's handshakes and joins against the hub's own count.
	connected, joined atomic.Int64

	// members is each group's size, kept from JoinRestaurant and
	// OnDisconnected (philippseith), because the library does not say how
	// many connections a group send addresses: it is the hub's own count
	// of the pushes an order makes, set beside the client's count.
	mu      sync.Mutex
	members map[string]int64  // group -> connections in it
	groupOf map[string]string // connection id -> its group
}

func (k *kitchen) join(conn, group string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.members == nil {
		k.members, k.groupOf = map[string]int64{}, map[string]string{}
	}
	if old, ok := k.groupOf[conn]; ok {
		if old == group {
			return
		}
		k.members[old]--
	}
	k.groupOf[conn] = group
	k.members[group]++
}

func (k *kitchen) leave(conn string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if g, ok := k.groupOf[conn]; ok {
		delete(k.groupOf, conn)
		k.members[g]--
	}
}

func (k *kitchen) groupSize(group string) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.members[group]
}

// kitchenHub is made per hub call by the library.
type kitchenHub struct {
	signalr.Hub
	k *kitchen
}

func groupOf(restaurant string) string { return "restaurant-" + restaurant }

// JoinRestaurant adds the caller to its restaurant's group.
func (h *kitchenHub) JoinRestaurant(restaurant string) string {
	h.Groups().AddToGroup(groupOf(restaurant), h.ConnectionID())
	h.k.join(h.ConnectionID(), groupOf(restaurant))
	h.k.joined.Add(1)
	return "joined " + restaurant
}

// LeaveRestaurant removes the caller from the group.
func (h *kitchenHub) LeaveRestaurant(restaurant string) {
	h.Groups().RemoveFromGroup(groupOf(restaurant), h.ConnectionID())
	h.k.leave(h.ConnectionID())
}

// Ping answers with the server's clock.
func (h *kitchenHub) Ping() int64 { return time.Now().UnixMilli() }

func (h *kitchenHub) OnConnected(string) {
	h.k.connected.Add(1)
	n := h.k.conns.Add(1)
	for p := h.k.peak.Load(); n > p && !h.k.peak.CompareAndSwap(p, n); p = h.k.peak.Load() {
	}
}

func (h *kitchenHub) OnDisconnected(id string) {
	h.k.leave(id)
	h.k.conns.Add(-1)
}

func (k *kitchen) philippseith(ctx context.Context, maxMsg uint, timeout time.Duration) error {
	hctx, cancel := context.WithCancel(ctx)
	srv, err := signalr.NewServer(hctx,
		signalr.HubFactory(func() signalr.HubInterface { return &kitchenHub{k: k} }),
		signalr.Logger(kitlog.NewNopLogger(), false),
		signalr.KeepAliveInterval(15*time.Second),
		signalr.TimeoutInterval(timeout),
		// The library answers 429 once 1,000 negotiations are pending; a
		// ramp of thousands has more than that in flight.
		signalr.MaxNegotiationConnections(0),
		// Every connection keeps a receive buffer of this size for its
		// life (32 KB by default); a kitchen display's messages are a
		// few hundred bytes.
		signalr.MaximumReceiveMessageSize(maxMsg),
	)
	if err != nil {
		cancel()
		return err
	}
	mux := http.NewServeMux()
	srv.MapHTTP(signalr.WithHTTPServeMux(mux), hubPath)
	k.srv, k.cancel, k.hub = srv, cancel, mux
	return nil
}

// placed pushes OrderPlaced {orderId, restaurantId, sentAt} to the
// restaurant's group; sigtest's hub pushes {order, sentAt}.
func (k *kitchen) placed(restaurant string) int64 {
	k.orders.Add(1)
	id := k.seq.Add(1)
	if k.sig != nil {
		before := k.sig.Pushes.Load()
		k.sig.PlaceOrder(restaurant, int(id))
		n := k.sig.Pushes.Load() - before
		k.pushes.Add(n)
		return n
	}
	n := k.groupSize(groupOf(restaurant))
	k.srv.HubClients().Group(groupOf(restaurant)).Send("OrderPlaced",
		map[string]any{"orderId": strconv.FormatInt(id, 10), "restaurantId": restaurant, "sentAt": time.Now().UnixMilli()})
	k.pushes.Add(n)
	return n
}

type stats struct {
	Connections int64 `json:"connections"`
	Peak        int64 `json:"peak"`
	Connected   int64 `json:"connected,omitempty"`
	Joined      int64 `json:"joined,omitempty"`
	Orders      int64 `json:"orders"`
	Pushes      int64 `json:"pushes"`
	Polls       int64 `json:"polls,omitempty"`
	Goroutines  int   `json:"goroutines"`
}

func (k *kitchen) stats() stats {
	s := stats{Orders: k.orders.Load(), Pushes: k.pushes.Load(), Goroutines: runtime.NumGoroutine()}
	if k.sig != nil {
		// Negotiated and not yet closed: a connection whose client
		// vanished counts until its next poll finds it gone.
		s.Connections = int64(k.sig.Open())
		s.Polls = k.sig.Polls.Load()
	} else {
		s.Connections, s.Peak = k.conns.Load(), k.peak.Load()
		s.Connected, s.Joined = k.connected.Load(), k.joined.Load()
	}
	return s
}
