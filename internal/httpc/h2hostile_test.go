package httpc

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

func h2EP(s *hostile.H2Server) *Endpoint {
	scheme := "http"
	if s.ClientTLS != nil {
		scheme = "https"
	}
	return &Endpoint{Scheme: scheme, Addr: s.Addr, Host: s.Addr, TLS: s.ClientTLS}
}

// h2Users runs users×each requests and returns the count per class and
// one message per class. No user ever holds more than one connection.
func h2Users(t *testing.T, ep *Endpoint, users, each int) (map[sample.Class]int, map[sample.Class]string) {
	counts, msgs, _ := h2UsersMessages(t, ep, users, each)
	return counts, msgs
}

// h2UsersMessages is h2Users with every distinct message of each class.
func h2UsersMessages(t *testing.T, ep *Endpoint, users, each int) (map[sample.Class]int, map[sample.Class]string, map[sample.Class]map[string]bool) {
	t.Helper()
	var mu sync.Mutex
	counts := map[sample.Class]int{}
	msgs := map[sample.Class]string{}
	distinct := map[sample.Class]map[string]bool{}
	var wg sync.WaitGroup
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testH2(t, ep, Options{})
			defer c.Close()
			var resp Response
			for i := 0; i < each; i++ {
				req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 20 * time.Second}
				err := c.RoundTrip(req, &resp)
				cl := Classify(err)
				if err == nil {
					cl = sample.FromStatus(resp.Status)
				}
				mu.Lock()
				counts[cl]++
				if err != nil {
					msgs[cl] = err.Error()
					if distinct[cl] == nil {
						distinct[cl] = map[string]bool{}
					}
					distinct[cl][err.Error()] = true
				}
				if len(c.conns) > 1 {
					t.Errorf("a user holds %d connections", len(c.conns))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return counts, msgs, distinct
}

// TestH2Hostile: against each hostile server, every request fails at once
// in its class with the server's reason, and the server read exactly as
// many requests as the client reports: nothing is resent. Before this
// client, net/http resent on GOAWAY (17,554 HEADERS for 40 requests) and
// REFUSED_STREAM (3 per request), and reported both as timeouts.
func TestH2Hostile(t *testing.T) {
	cases := []struct {
		name   string
		server func(testing.TB, bool) *hostile.H2Server
		class  sample.Class
		msg    string
	}{
		{"endless CONTINUATION", hostile.H2EndlessContinuation, sample.Other, "response header block longer than 65536 bytes"},
		{"FLOW_CONTROL_ERROR", hostile.H2FlowControl, sample.Other, "HTTP/2 FLOW_CONTROL_ERROR"},
		{"PUSH_PROMISE", hostile.H2PushPromise, sample.Other, "HTTP/2 PROTOCOL_ERROR: the server sent PUSH_PROMISE"},
		{"HPACK bomb", hostile.H2HPACKBomb, sample.Other, "response header block longer than 65536 bytes"},
		{"GOAWAY on every stream", hostile.H2GoAwayEvery, sample.Refused, "GOAWAY NO_ERROR"},
		{"REFUSED_STREAM", hostile.H2RefusedStream, sample.Refused, "RST_STREAM REFUSED_STREAM"},
		{"SETTINGS flood", hostile.H2SettingsFlood, sample.Other, "ENHANCE_YOUR_CALM"},
		{"PING flood", hostile.H2PingFlood, sample.Other, "ENHANCE_YOUR_CALM"},
	}
	for _, tc := range cases {
		for _, useTLS := range []bool{false, true} {
			if useTLS && tc.class == sample.Refused && testing.Short() {
				continue
			}
			name := tc.name
			if useTLS {
				name += " over TLS"
			}
			t.Run(name, func(t *testing.T) {
				srv := tc.server(t, useTLS)
				const users, each = 3, 5
				counts, msgs, distinct := h2UsersMessages(t, h2EP(srv), users, each)
				// One cause, one message: failures are grouped by message,
				// and a stream number in each made every refusal a row of
				// its own in the error table.
				if n := len(distinct[tc.class]); n != 1 {
					t.Errorf("%d distinct messages for one cause: %v", n, distinct[tc.class])
				}
				if counts[tc.class] != users*each {
					t.Fatalf("classes %v, want all %d in %v; messages %q", counts, users*each, tc.class, msgs)
				}
				if !strings.Contains(msgs[tc.class], tc.msg) {
					t.Errorf("message %q does not say %q", msgs[tc.class], tc.msg)
				}
				if got := srv.Requests(); got != users*each {
					t.Errorf("the server read %d requests; the client reported %d", got, users*each)
				}
			})
		}
	}
}

// TestH2RSTFlood: RST_STREAM frames for a closed stream, forever, fail the
// request they hold up after bounded work; the connection's first request,
// answered, is fine.
func TestH2RSTFlood(t *testing.T) {
	srv := hostile.H2RSTFlood(t, false)
	counts, msgs := h2Users(t, h2EP(srv), 2, 6)
	if counts[sample.OK] != 6 || counts[sample.Other] != 6 || !strings.Contains(msgs[sample.Other], "ENHANCE_YOUR_CALM") {
		t.Fatalf("classes %v %q, want 6 ok and 6 other", counts, msgs)
	}
	if srv.Requests() != 12 {
		t.Fatalf("the server read %d requests, the client reported 12", srv.Requests())
	}
}

// TestH2GoAwayRotation: a server that sends GOAWAY (NO_ERROR) with every
// 5th request of a connection, as nginx does after keepalive_requests, gets
// every request once, on exactly one new connection per 5 requests: no
// storm, no request refused, one live connection per user at most.
func TestH2GoAwayRotation(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		srv := hostile.H2Rotate(t, useTLS, 5)
		const users, each = 4, 25
		counts, msgs := h2Users(t, h2EP(srv), users, each)
		if counts[sample.OK] != users*each {
			t.Fatalf("tls %v: classes %v %q", useTLS, counts, msgs)
		}
		if srv.Requests() != users*each || srv.Conns() != users*each/5 {
			t.Fatalf("tls %v: server read %d requests on %d connections, want %d on %d", useTLS, srv.Requests(), srv.Conns(), users*each, users*each/5)
		}
	}
}

// TestH2DeadConnsReleased: against a server whose every connection dies of
// a connection error, the heap after many requests is what it was after a
// few: a dead connection's framer, HPACK tables and buffers go at once.
func TestH2DeadConnsReleased(t *testing.T) {
	srv := hostile.H2PushPromise(t, false)
	ep := h2EP(srv)
	c := testH2(t, ep, Options{})
	defer c.Close()
	var resp Response
	run := func(n int) {
		for i := 0; i < n; i++ {
			req := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 20 * time.Second}
			if err := c.RoundTrip(req, &resp); Classify(err) != sample.Other {
				t.Fatalf("request %d: %v", i, err)
			}
			if len(c.conns) != 0 {
				t.Fatalf("a dead connection is still held")
			}
		}
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		for i := 0; i < 3; i++ {
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	run(50)
	before := heap()
	run(500)
	after := heap()
	// A kept dead connection is about 40 KB: 500 of them would be 20 MB.
	if after > before+2<<20 {
		t.Fatalf("heap grew from %d to %d bytes over 500 dead connections", before, after)
	}
	if srv.Requests() != 550 {
		t.Fatalf("the server read %d requests, the client sent 550", srv.Requests())
	}
}
