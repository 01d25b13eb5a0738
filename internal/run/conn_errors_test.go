package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/stampede-load/stampede/internal/result"
)

// Connection failures keep what the server said, with counts that add up
// to each class: a negotiate refused with a JSON body, and WebSocket
// sessions the server closes with its own code and reason.
func TestConnectionFailuresKeepTheirReasons(t *testing.T) {
	leakCheck(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hubs/full/negotiate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":"hub is full"}`))
	})
	mux.HandleFunc("/kick", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.Close(4001, "kicked by the server")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	p := connPlan(t, `
target: `+srv.URL+`
scenarios:
  display: {users: 2, signalr: {url: "/hubs/full", reconnect: 100ms}}
  ticker:
    users: 2
    websocket:
      url: "/kick"
      reconnect: 100ms
      steps:
        - hold: 2s
load: {stages: [{duration: 1s, users: 1}]}
`)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	neg := connStep(t, res, "display", "negotiate")
	if err := neg.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	want := `negotiate: 503 Service Unavailable: {"error":"hub is full"}`
	if neg.Failed == 0 || len(neg.Errors) != 1 || neg.Errors[0].Count != neg.Failed || !strings.Contains(neg.Errors[0].Message, want) {
		t.Errorf("negotiate failures %d, messages %+v; want all %q", neg.Failed, neg.Errors, want)
	}
	session := connStep(t, res, "ticker", "session")
	if err := session.CheckErrorCounts(); err != nil {
		t.Fatal(err)
	}
	var kicked int64
	for _, e := range session.Errors {
		if strings.Contains(e.Message, "4001") && strings.Contains(e.Message, "kicked by the server") {
			kicked += e.Count
		}
	}
	if kicked == 0 || kicked != session.Failed {
		t.Errorf("session failed %d, kicked messages %d: %+v", session.Failed, kicked, session.Errors)
	}
	var steps []result.Step
	steps = append(steps, res.Steps...)
	for _, s := range steps {
		if err := s.CheckErrorCounts(); err != nil {
			t.Error(err)
		}
	}
}
