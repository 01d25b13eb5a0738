package demo

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr"
)

// The kitchen hub and the ordering route together: an order is pushed to
// exactly the displays that joined its restaurant, and Stats counts it.
func TestKitchenHubPushesOrders(t *testing.T) {
	url, stop, err := Start(context.Background(), "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	o := &signalr.Options{HTTPClient: &http.Client{Transport: &http.Transport{}}, Stats: signalr.NewStats("OrderPlaced")}
	defer o.HTTPClient.CloseIdleConnections()
	type push struct {
		OrderID      string `json:"orderId"`
		RestaurantID string `json:"restaurantId"`
		SentAt       int64  `json:"sentAt"`
	}
	got := make(chan push, 10)
	var conns []*signalr.Conn
	for _, r := range []string{"7", "7", "8"} {
		c, err := signalr.Connect(ctx, url+HubPath, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.On("OrderPlaced", func(args json.RawMessage) {
			var p []push
			json.Unmarshal(args, &p)
			if len(p) == 1 {
				got <- p[0]
			}
		})
		res, err := c.Invoke(ctx, "JoinRestaurant", r)
		if err != nil || string(res) != `"joined `+r+`"` {
			t.Fatalf("JoinRestaurant(%s) = %s, %v", r, res, err)
		}
		conns = append(conns, c)
	}
	order := func(r string) string {
		resp, err := http.Post(url+"/restaurants/"+r+"/orders", "application/json", strings.NewReader(`{"items":[1]}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b struct{ OrderID, Status string }
		json.NewDecoder(resp.Body).Decode(&b)
		if resp.StatusCode != http.StatusCreated || b.Status != "placed" {
			t.Fatalf("order: %d %+v", resp.StatusCode, b)
		}
		return b.OrderID
	}
	id := order("7")
	for i := 0; i < 2; i++ {
		select {
		case p := <-got:
			if p.OrderID != id || p.RestaurantID != "7" || time.Since(time.UnixMilli(p.SentAt)) > 5*time.Second {
				t.Errorf("push %+v for order %s", p, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the displays of restaurant 7 got no OrderPlaced")
		}
	}
	select {
	case p := <-got:
		t.Errorf("restaurant 8's display got %+v", p)
	case <-time.After(200 * time.Millisecond):
	}
	// A display that leaves no longer counts.
	conns[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := statsOf(t, url); st.Kitchen != nil && st.Kitchen.Connections == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	order("7")
	order("9") // nobody there
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the remaining display of restaurant 7 got no OrderPlaced")
	}
	st := statsOf(t, url).Kitchen
	if st == nil || st.Orders != 3 || st.Pushes != 3 || st.Written != 3 || st.Connections != 2 || st.Peak != 3 {
		t.Errorf("kitchen stats %+v: want 3 orders, 3 pushes, 3 written, 2 connections, peak 3", st)
	}
}

func statsOf(t *testing.T, url string) Stats {
	t.Helper()
	resp, err := http.Get(url + "/__stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	json.NewDecoder(resp.Body).Decode(&st)
	return st
}

func TestOrderRouteErrors(t *testing.T) {
	s := New(Options{})
	defer s.CloseHub()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/restaurants/1/orders", http.StatusMethodNotAllowed},
		{http.MethodPost, "/restaurants//orders", http.StatusNotFound},
		{http.MethodPost, "/restaurants/1/2/orders", http.StatusNotFound},
		{http.MethodPost, "/restaurants/1", http.StatusNotFound},
	} {
		if r := do(t, s, c.method, c.path, nil, ""); r.code != c.want {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, r.code, c.want)
		}
	}
	if st := s.Stats(); st.Kitchen != nil {
		t.Errorf("the hub started without a hub request or order: %+v", st.Kitchen)
	}
}
