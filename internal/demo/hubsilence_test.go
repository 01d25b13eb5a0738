package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr"
)

// Idle kitchen displays stay connected in both hub protocols as long as
// they ping, and one that falls silent is dropped. The hub library's own
// client timeout closed idle MessagePack connections (their Pings parsed
// late, then not at all) after its interval however long.
func TestKitchenHubIdleClients(t *testing.T) {
	defer func(d time.Duration) { clientSilence = d }(clientSilence)
	clientSilence = 5 * time.Second
	url, stop, err := Start(context.Background(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	connect := func(protocol string, keepAlive time.Duration) *signalr.Conn {
		t.Helper()
		o := &signalr.Options{
			HTTPClient: &http.Client{Transport: &http.Transport{}},
			Protocol:   signalr.ProtocolNamed(protocol),
			KeepAlive:  keepAlive,
			// Only the hub's side is under test.
			ServerTimeout: -1,
		}
		t.Cleanup(o.HTTPClient.CloseIdleConnections)
		c, err := signalr.Connect(ctx, url+HubPath, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Invoke(ctx, "JoinRestaurant", "7"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Pings 20 to a silence limit.
	idle := map[string]*signalr.Conn{
		"json":        connect("json", clientSilence/20),
		"messagepack": connect("messagepack", clientSilence/20),
	}
	silent := connect("messagepack", -1)

	select {
	case <-silent.Done():
	case <-time.After(clientSilence + time.Minute):
		t.Fatalf("a client silent for %v was not dropped", clientSilence+time.Minute)
	}
	// Well past the silence limit: the pinging ones are still there.
	time.Sleep(2 * clientSilence)
	for p, c := range idle {
		select {
		case <-c.Done():
			t.Errorf("idle %s client that pings was dropped: %+v", p, c.Disconnect())
		default:
		}
	}
	// The hub's count agrees: the two that ping, not the silent one.
	resp, err := http.Get(url + "/__stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Kitchen == nil {
		t.Fatalf("stats: %v %+v", err, st)
	}
	if st.Kitchen.Connections != 2 {
		t.Errorf("hub counts %d connections open, want the 2 that ping", st.Kitchen.Connections)
	}
}
