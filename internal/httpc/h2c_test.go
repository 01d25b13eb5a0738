package httpc

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// h2cServer serves HTTP/1.1 and h2c on one port and counts connections.
func h2cServer(t *testing.T, h http.HandlerFunc) (*Endpoint, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	var pr http.Protocols
	pr.SetHTTP1(true)
	pr.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &pr
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	return &Endpoint{Scheme: "http", Addr: addr, Host: addr}, &conns
}

// TestH2COwnConnection: with Options.H2C, requests of each user go as
// HTTP/2 over the user's own connection; without it, as HTTP/1.1 over the
// user's own connection. Either way 3 users open 3 connections.
func TestH2COwnConnection(t *testing.T) {
	ep, conns := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Proto))
	})
	for _, h2c := range []bool{true, false} {
		conns.Store(0)
		sh := NewShared(Options{H2C: h2c})
		users := []*Mux{sh.NewTransport(), sh.NewTransport(), sh.NewTransport()}
		for i := 0; i < 3; i++ {
			for _, u := range users {
				var resp Response
				req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 10 * time.Second, KeepBody: true}
				if err := u.RoundTrip(req, &resp); err != nil {
					t.Fatal(err)
				}
				want := "HTTP/1.1"
				if h2c {
					want = "HTTP/2.0"
				}
				if resp.Status != 200 || string(resp.Body) != want {
					t.Fatalf("h2c %v: %d %q, want 200 %q", h2c, resp.Status, resp.Body, want)
				}
			}
		}
		const wantConns = 3
		if got := conns.Load(); got != wantConns {
			t.Errorf("h2c %v: 9 requests of 3 users opened %d connections, want %d", h2c, got, wantConns)
		}
		for _, u := range users {
			u.Close()
		}
		sh.Close()
	}
}

// TestH2CInterrupt: Interrupt cuts off an h2c request in flight.
func TestH2CInterrupt(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	started := make(chan struct{}, 1)
	ep, _ := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	sh := NewShared(Options{H2C: true})
	defer sh.Close()
	m := sh.NewTransport()
	done := make(chan error, 1)
	go func() {
		var resp Response
		done <- m.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: time.Minute}, &resp)
	}()
	<-started
	m.Interrupt()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("interrupted request succeeded")
		}
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("interrupted h2c request failed with %v, want ErrInterrupted", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Interrupt did not cut off the h2c request")
	}
}
