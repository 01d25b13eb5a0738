package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/result"
)

// A negotiate and a WebSocket upgrade still in flight when the run ends
// get the grace period, as HTTP requests do, and count as what the server
// answered, not as failures the run's own end caused. The server holds
// both until it sees the held connection closed, which happens only once
// the run's end has reached the connections: before the fix they were cut
// off at that moment (counted interrupted) and no timing decides which
// comes first.
func TestConnectsInFlightAtTheEndGetTheGrace(t *testing.T) {
	leakCheck(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	arrived := make(chan string, 2)
	var negotiates, upgrades atomic.Int64
	// hold blocks the second attempt of each kind (the first fails at once,
	// so that every slot has tried and the population is in place).
	hold := func(w http.ResponseWriter, r *http.Request, what string) bool {
		arrived <- what
		select {
		case <-release:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/hubs/slow/negotiate", func(w http.ResponseWriter, r *http.Request) {
		if negotiates.Add(1) == 2 && !hold(w, r, "negotiate") {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":"hub is full"}`))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		switch n := upgrades.Add(1); {
		case n == 1:
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		case n == 2 && !hold(w, r, "upgrade"):
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/held", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			if _, _, err := c.Read(r.Context()); err != nil {
				// Closed by the run's end: let the held requests answer.
				releaseOnce.Do(func() { close(release) })
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer releaseOnce.Do(func() { close(release) })
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  display: {users: 1, signalr: {url: "/hubs/slow", reconnect: 10ms}}
  feed: {users: 1, websocket: {url: "/slow", reconnect: 10ms, steps: [{hold: run}]}}
  anchor: {users: 1, websocket: {url: "/held", steps: [{hold: run}]}}
load: {grace: 1m, stages: [{duration: 1m, users: 1}]}
`)
	end := make(chan struct{})
	inPlace := make(chan struct{})
	var inPlaceOnce sync.Once
	type out struct {
		res *result.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), p, Options{End: end,
			InPlace: func(*result.Result) { inPlaceOnce.Do(func() { close(inPlace) }) }})
		done <- out{res, err}
	}()
	// Safety net only: on a loaded machine all of this still happens,
	// later.
	safety := time.After(50 * time.Second)
	select {
	case <-inPlace:
	case <-safety:
		t.Fatal("population never in place")
	}
	for got := map[string]bool{}; len(got) < 2; {
		select {
		case w := <-arrived:
			got[w] = true
		case <-safety:
			t.Fatalf("held requests never arrived: %v", got)
		}
	}
	// The anchor is held (the population was in place), the second
	// negotiate and upgrade wait on the server: end the run now.
	close(end)
	var o out
	select {
	case o = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("run did not end")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	res := o.res
	checkInvariants(t, res)

	neg := connStep(t, res, "display", "negotiate")
	if err := neg.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	want := `negotiate: 503 Service Unavailable: {"error":"hub is full"}`
	if neg.Failed != 2 || len(neg.Errors) != 1 || neg.Errors[0].Count != 2 || !strings.Contains(neg.Errors[0].Message, want) {
		t.Errorf("negotiate failed %d, messages %+v; want both %q", neg.Failed, neg.Errors, want)
	}
	display := connScenario(t, res, "display")
	checkConnSums(t, display)
	if display.Attempts != 2 || display.ByClass["server_error"] != 2 {
		t.Errorf("display %+v: want 2 attempts, both server_error", display)
	}

	up := connStep(t, res, "feed", "upgrade")
	if up.Successful != 1 || up.Failed != 1 || up.ByClass["interrupted"] != 0 {
		t.Errorf("upgrade %+v: want the held one successful, the first refused", up)
	}
	feed := connScenario(t, res, "feed")
	checkConnSums(t, feed)
	if feed.Opened != 1 || feed.OpenAtEnd != 1 || feed.Failed != 1 || feed.ByClass["server_error"] != 1 {
		t.Errorf("feed %+v: want 1 opened (open at the end), 1 refused", feed)
	}
	anchor := connScenario(t, res, "anchor")
	checkConnSums(t, anchor)
	if anchor.Opened != 1 || anchor.OpenAtEnd != 1 || anchor.Failed != 0 {
		t.Errorf("anchor %+v", anchor)
	}
	for _, s := range res.Steps {
		if n := s.ByClass["interrupted"]; n != 0 {
			t.Errorf("%s/%s: %d interrupted", s.Scenario, s.Name, n)
		}
	}
}

// A negotiate the server never answers is cut off when the grace runs
// out, counted once as interrupted, and the run still ends.
func TestConnectInFlightPastTheGraceIsInterrupted(t *testing.T) {
	leakCheck(t)
	arrived := make(chan struct{}, 1)
	var negotiates atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/hubs/stuck/negotiate", func(w http.ResponseWriter, r *http.Request) {
		if negotiates.Add(1) == 1 {
			w.WriteHeader(503)
			return
		}
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  display: {users: 1, signalr: {url: "/hubs/stuck", reconnect: 10ms}}
load: {grace: 100ms, stages: [{duration: 1m, users: 1}]}
`)
	end := make(chan struct{})
	done := make(chan *result.Result, 1)
	go func() {
		res, err := Run(context.Background(), p, Options{End: end})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case <-arrived:
	case <-time.After(50 * time.Second):
		t.Fatal("second negotiate never arrived")
	}
	close(end)
	var res *result.Result
	select {
	case res = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("run did not end")
	}
	if res == nil {
		return
	}
	checkInvariants(t, res)
	display := connScenario(t, res, "display")
	checkConnSums(t, display)
	if display.Attempts != 2 || display.ByClass["server_error"] != 1 || display.ByClass["interrupted"] != 1 {
		t.Errorf("display %+v: want the refused attempt and the one cut off", display)
	}
}
