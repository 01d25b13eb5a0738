package run

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/result"
)

// runEngines runs src on each engine and returns the results, in the
// order of engines.
func runEngines(t *testing.T, src string, engines ...string) []*result.Result {
	t.Helper()
	var out []*result.Result
	for _, engine := range engines {
		res, err := Run(context.Background(), mustPlan(t, src), Options{Engine: engine, SkipPreflight: true})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, res)
		if res.Run.Engine != engine {
			t.Fatalf("run.engine = %q, want %q", res.Run.Engine, engine)
		}
		out = append(out, res)
	}
	return out
}

// Bytes a server sends after an answer, long before the next request on
// the connection, belong to no answer: each engine classifies the
// arrivals that follow alike.
func TestEnginesLateStrayBytesAlike(t *testing.T) {
	needLoop(t)
	srv := hostile.Serve(t, nil, func(s *hostile.Server, c net.Conn) {
		br := bufio.NewReader(c)
		for s.ReadRequest(br) {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			select {
			case <-time.After(20 * time.Millisecond):
			case <-s.Quit():
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray")
		}
	})
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		conns, reqs := srv.Conns(), srv.Requests()
		r := runEngines(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /, timeout: 1s}]}}
load: {max_in_flight: 1, stages: [{duration: 1s, rate: 5/s}]}
`, engine)[0]
		conns, reqs = srv.Conns()-conns, srv.Requests()-reqs
		// The stray bytes end the connection: the next arrival dials
		// anew and is answered, never failed by bytes sent before it.
		if got := classes(r); !slices.Equal(got, []string{"ok"}) || r.Totals.Requests == 0 || conns != reqs {
			t.Errorf("%s: classes %v of %d requests (%v), %d connections for %d requests; want all ok, one connection each",
				engine, got, r.Totals.Requests, r.Steps[0].Errors, conns, reqs)
		}
	}
}

// A server that closes each connection after its answer without saying
// so (no Connection: close) races a closed-model user sending its next
// request at once. Either engine counts a request that lost the race (sent
// on the connection as it closed) as conn_reset, never as another class
// and never sent again; how often the race is lost differs (the loop sends
// sooner), which the log shows.
func TestEnginesClosedSilentCloseAlike(t *testing.T) {
	needLoop(t)
	srv := serveEach(t, func(s *hostile.Server, c net.Conn) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return false
	})
	res := runEngines(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /, timeout: 1s}]}}
load: {grace: 2s, stages: [{duration: 400ms, users: 2}]}
`, EngineGoroutines, EngineLoop)
	for _, r := range res {
		got := classes(r)
		if r.Totals.Successful == 0 || slices.ContainsFunc(got, func(c string) bool { return c != "ok" && c != "conn_reset" }) {
			t.Errorf("%s: classes %v of %d requests (%v), want ok and at most conn_reset", r.Run.Engine, got, r.Totals.Requests, r.Steps[0].Errors)
		}
		t.Logf("%s: %d requests, %d conn_reset", r.Run.Engine, r.Totals.Requests, r.Totals.ByClass["conn_reset"])
	}
}

// At the same max_in_flight, against a server slower than the arrivals,
// each engine sends or drops every arrival of the schedule, never holds
// more than max_in_flight requests at the server, and drops some. How many
// it drops differs with how soon each frees a slot, which the log shows.
func TestEnginesDropAtTheSameMaxInFlight(t *testing.T) {
	needLoop(t)
	var cur, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		time.Sleep(50 * time.Millisecond)
		cur.Add(-1)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	const arrivals = 50 // 100/s for 500ms
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		peak.Store(0)
		r := runEngines(t, `
target: `+srv.URL+`
scenarios: {s: {steps: [{get: /}]}}
load: {max_in_flight: 2, grace: 5s, stages: [{duration: 500ms, rate: 100/s}]}
`, engine)[0]
		dropped := r.Totals.ByClass["dropped"]
		if r.Totals.Requests != arrivals || dropped == 0 || r.Totals.Successful+dropped != arrivals || peak.Load() > 2 {
			t.Errorf("%s: %d requests (%d ok, %d dropped, %v), peak %d at the server; want %d arrivals each sent or dropped, some dropped, at most 2 at once",
				engine, r.Totals.Requests, r.Totals.Successful, dropped, r.Totals.ByClass, peak.Load(), arrivals)
		}
		t.Logf("%s: %d sent, %d dropped", engine, r.Totals.Successful, dropped)
	}
}
