package demo

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	kitlog "github.com/go-kit/log"
	"github.com/philippseith/signalr"
)

// The restaurant side of the demo (a restaurant-ordering system in
// miniature): kitchen displays hold a SignalR connection to /hubs/kitchen
// and join their restaurant's group; POST /restaurants/{id}/orders stores
// an order and pushes OrderPlaced {orderId, restaurantId, sentAt} to that
// group. The hub is github.com/philippseith/signalr, a third-party
// implementation of the ASP.NET Core server side, so stampede is tested
// against a peer it was not written with.

// HubPath is where the kitchen hub is served.
const HubPath = "/hubs/kitchen"

// clientSilence is how long a WebSocket client may send nothing before
// the hub drops it: ASP.NET Core's ClientTimeoutInterval, twice the
// clients' 15 s keep-alive. A variable for tests, read when a hub starts.
var clientSilence = 30 * time.Second

// kitchen owns the hub server and the bookkeeping the e2e tests compare
// stampede's counts with: every push addressed to a joined connection.
type kitchen struct {
	srv     signalr.Server
	cancel  context.CancelFunc
	handler http.Handler
	silence time.Duration // clientSilence when the hub started

	// mu orders joins, leaves and group sends, so Pushes counts exactly
	// the group members each OrderPlaced was sent to.
	mu      sync.Mutex
	members map[string]int      // restaurant id -> joined connections
	joined  map[string][]string // connection id -> restaurant ids

	conns  atomic.Int64 // open hub connections
	peak   atomic.Int64
	orders atomic.Uint64
	pushes atomic.Uint64
	// written counts the pushes that reached a socket (hubwire.go).
	written atomic.Uint64
	seq     atomic.Uint64
}

// kitchenHub is instantiated per hub call by the library.
type kitchenHub struct {
	signalr.Hub
	k *kitchen
}

func groupOf(restaurant string) string { return "restaurant-" + restaurant }

// JoinRestaurant adds the caller to its restaurant's group, as a kitchen
// display does when it starts.
func (h *kitchenHub) JoinRestaurant(restaurant string) string {
	k, id := h.k, h.ConnectionID()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.joined[id] {
		if r == restaurant {
			return "joined " + restaurant
		}
	}
	h.Groups().AddToGroup(groupOf(restaurant), id)
	k.members[restaurant]++
	k.joined[id] = append(k.joined[id], restaurant)
	return "joined " + restaurant
}

// LeaveRestaurant removes the caller from the group.
func (h *kitchenHub) LeaveRestaurant(restaurant string) {
	k, id := h.k, h.ConnectionID()
	k.mu.Lock()
	defer k.mu.Unlock()
	rs := k.joined[id]
	for i, r := range rs {
		if r == restaurant {
			h.Groups().RemoveFromGroup(groupOf(restaurant), id)
			k.members[restaurant]--
			k.joined[id] = append(rs[:i:i], rs[i+1:]...)
			return
		}
	}
}

// Ping answers with the server's clock, for clients that measure a round
// trip.
func (h *kitchenHub) Ping() int64 { return time.Now().UnixMilli() }

func (h *kitchenHub) OnConnected(string) {
	n := h.k.conns.Add(1)
	for {
		p := h.k.peak.Load()
		if n <= p || h.k.peak.CompareAndSwap(p, n) {
			break
		}
	}
}

func (h *kitchenHub) OnDisconnected(id string) {
	k := h.k
	k.conns.Add(-1)
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.joined[id] {
		k.members[r]--
		if k.members[r] <= 0 {
			delete(k.members, r)
		}
		// The library drops the connection from its groups after this
		// returns; removing it here keeps a send in between from counting
		// a push that cannot arrive.
		h.Groups().RemoveFromGroup(groupOf(r), id)
	}
	delete(k.joined, id)
}

func newKitchen() (*kitchen, error) {
	k := &kitchen{members: map[string]int{}, joined: map[string][]string{}, silence: clientSilence}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := signalr.NewServer(ctx,
		signalr.HubFactory(func() signalr.HubInterface { return &kitchenHub{k: k} }),
		signalr.Logger(kitlog.NewNopLogger(), false),
		// The ASP.NET Core default: a ping every 15 s.
		signalr.KeepAliveInterval(15*time.Second),
		// The library's own client timeout stays out of the way: v0.11.0
		// parses a MessagePack Ping (a 3-byte frame) only when later
		// bytes arrive, and ever later, so an idle MessagePack client's
		// pings stop counting and it would be closed after the timeout
		// however long. A client silent for clientSilence is dropped at
		// its socket instead (pushConn.Read), where a Ping counts on
		// arrival in either protocol.
		signalr.TimeoutInterval(24*time.Hour),
		// The library answers 429 once 1,000 negotiations are pending
		// (negotiated, not yet connected); a ramp of thousands of kitchen
		// displays has more than that in flight.
		signalr.MaxNegotiationConnections(0),
	)
	if err != nil {
		cancel()
		return nil, err
	}
	mux := http.NewServeMux()
	srv.MapHTTP(signalr.WithHTTPServeMux(mux), HubPath)
	k.srv, k.cancel, k.handler = srv, cancel, k.countWritten(mux)
	return k, nil
}

// placed pushes OrderPlaced to the restaurant's group and counts the
// connections it went to.
func (k *kitchen) placed(orderID, restaurant string) {
	k.orders.Add(1)
	msg := map[string]any{"orderId": orderID, "restaurantId": restaurant, "sentAt": time.Now().UnixMilli()}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := k.members[restaurant]; n > 0 {
		k.pushes.Add(uint64(n))
		k.srv.HubClients().Group(groupOf(restaurant)).Send("OrderPlaced", msg)
	}
}

func (k *kitchen) close() { k.cancel() }

// HubStats are the restaurant side's counters, in Stats.
type HubStats struct {
	// Connections is the number of open hub connections; Peak the most
	// at once.
	Connections int64 `json:"connections"`
	Peak        int64 `json:"peak"`
	// Orders is the number of orders placed; Pushes the OrderPlaced
	// messages sent, one per joined connection of the order's restaurant.
	Orders uint64 `json:"orders"`
	Pushes uint64 `json:"pushes"`
	// Written is the OrderPlaced pushes written to the connections'
	// sockets: Pushes less those the hub library dropped because the
	// connection had closed by the time their turn came (an order placed
	// as a display closes).
	Written uint64 `json:"written"`
}

func (k *kitchen) stats() HubStats {
	return HubStats{Connections: k.conns.Load(), Peak: k.peak.Load(), Orders: k.orders.Load(), Pushes: k.pushes.Load(), Written: k.written.Load()}
}
