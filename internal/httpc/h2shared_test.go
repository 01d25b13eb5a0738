package httpc

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/hostile"
	"github.com/stampede-load/stampede/internal/sample"
)

// sharedUsers makes n users of one run in shared mode.
func sharedUsers(t *testing.T, ep *Endpoint, o Options, n int) []*H2 {
	o.TLS = ep.TLS
	o.H2Shared = true
	sh := NewShared(o)
	var users []*H2
	var muxes []*Mux
	for i := 0; i < n; i++ {
		m := sh.NewTransport()
		muxes = append(muxes, m)
		users = append(users, m.h2.(*H2))
	}
	t.Cleanup(func() {
		for _, m := range muxes {
			m.Close()
		}
		sh.Close()
	})
	return users
}

// TestH2SharedMultiplex: in shared mode the streams of several users, at
// the same time, go over one connection, bodies both ways intact.
func TestH2SharedMultiplex(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		ep, conns := goH2(t, useTLS, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Write(b)
		})
		users := sharedUsers(t, ep, Options{}, 8)
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := bytes.Repeat([]byte{byte('a' + i)}, 100000+i)
				var resp Response
				for j := 0; j < 5; j++ {
					req := &Request{Method: "POST", Endpoint: ep, PathQuery: []byte("/"), Body: body, Timeout: 20 * time.Second, KeepBody: true}
					if err := u.RoundTrip(req, &resp); err != nil || !bytes.Equal(resp.Body, body) {
						t.Errorf("user %d: %v, %d bytes back", i, err, len(resp.Body))
						return
					}
				}
			}()
		}
		wg.Wait()
		if got := conns.Load(); got != 1 {
			t.Errorf("tls %v: 8 users in shared mode opened %d connections, want 1", useTLS, got)
		}
	}
}

// TestH2SharedStreamLimit: a connection carries no more streams than the
// server's SETTINGS_MAX_CONCURRENT_STREAMS; more users open more
// connections, and under max_connections_per_host they wait for a stream
// instead. No request is refused either way.
func TestH2SharedStreamLimit(t *testing.T) {
	for _, cap := range []int{0, 1} {
		var inFlight, most, arrived atomic.Int64
		release := make(chan struct{})
		ep, conns := goH2With(t, false, func(w http.ResponseWriter, r *http.Request) {
			n := inFlight.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			arrived.Add(1)
			<-release
			inFlight.Add(-1)
		}, func(s *http.Server) { s.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 2} })
		users := sharedUsers(t, ep, Options{MaxConnsPerHost: cap}, 6)
		errs := make(chan error, len(users))
		for _, u := range users {
			go func() {
				var resp Response
				errs <- u.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 30 * time.Second}, &resp)
			}()
		}
		want := int64(6)
		if cap == 1 {
			want = 2
		}
		for arrived.Load() < want {
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
		for range users {
			if err := <-errs; err != nil {
				t.Fatalf("cap %d: %v (%v)", cap, err, Classify(err))
			}
		}
		if cap == 0 && conns.Load() < 3 {
			t.Errorf("6 users, 2 streams a connection: %d connections", conns.Load())
		}
		if cap == 1 && (conns.Load() != 1 || most.Load() > 2) {
			t.Errorf("cap 1: %d connections, %d streams at once", conns.Load(), most.Load())
		}
	}
}

// TestH2SharedTimeoutAndInterrupt: a stream that times out is cancelled
// alone; the connection and the other users' streams go on. Interrupt
// cuts a user's wait.
func TestH2SharedTimeoutAndInterrupt(t *testing.T) {
	ep, conns := goH2(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	})
	users := sharedUsers(t, ep, Options{}, 2)
	var resp Response
	slow := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/slow"), Timeout: 100 * time.Millisecond}
	if err := users[0].RoundTrip(slow, &resp); Classify(err) != sample.Timeout {
		t.Fatalf("slow request: %v", err)
	}
	var resp2 Response
	if err := users[1].RoundTrip(h2get(ep, "/"), &resp2); err != nil || string(resp2.Body) != "ok" {
		t.Fatalf("the other user after a timeout: %v %q", err, resp2.Body)
	}
	done := make(chan error, 1)
	go func() {
		slow := &Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/slow"), Timeout: time.Minute}
		var resp Response
		done <- users[0].RoundTrip(slow, &resp)
	}()
	time.Sleep(50 * time.Millisecond)
	users[0].Interrupt()
	if err := <-done; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted: %v", err)
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections, want the one shared", conns.Load())
	}
}

// TestH2SharedRefused: shared mode keeps the truth rules: REFUSED_STREAM
// and GOAWAY fail at once as refused, nothing is resent (the server never
// reads more requests than the client reports).
func TestH2SharedRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		srv   func(testing.TB, bool) *hostile.H2Server
		exact bool
	}{
		{"REFUSED_STREAM", hostile.H2RefusedStream, true},
		// The server closes after its GOAWAY: streams in flight beside the
		// one it read are refused without having been read.
		{"GOAWAY", hostile.H2GoAwayEvery, false},
	} {
		srv := tc.srv(t, false)
		ep := h2EP(srv)
		users := sharedUsers(t, ep, Options{}, 4)
		var wg sync.WaitGroup
		var mu sync.Mutex
		counts := map[sample.Class]int{}
		var msg string
		for _, u := range users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resp Response
				for i := 0; i < 5; i++ {
					err := u.RoundTrip(&Request{Method: "GET", Endpoint: ep, PathQuery: []byte("/"), Timeout: 20 * time.Second}, &resp)
					mu.Lock()
					c := Classify(err)
					counts[c]++
					if c == sample.Refused {
						// A refusal says so; the conn_reset of a write
						// after the close (GOAWAY) says its own thing.
						msg = err.Error()
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		// Against the closing server, a stream written after the server
		// closed (its GOAWAY not read yet) fails as the write's reset.
		if tc.exact && counts[sample.Refused] != 20 || counts[sample.Refused]+counts[sample.ConnReset] != 20 || !strings.Contains(msg, "refused") && counts[sample.Refused] > 0 {
			t.Fatalf("%s: classes %v (%s), want 20 refused", tc.name, counts, msg)
		}
		if got := srv.Requests(); got > 20 || tc.exact && got != 20 {
			t.Fatalf("%s: the server read %d requests; the client reported 20", tc.name, got)
		}
	}
}
