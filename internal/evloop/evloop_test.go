//go:build linux

package evloop

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// fixedServer answers every request with the same bytes, allocating
// nothing per request, and closes reached once it has answered target
// requests.
type fixedServer struct {
	ln      net.Listener
	n       atomic.Int64
	target  atomic.Int64
	reached chan struct{} // gets a value each time n reaches target
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn // accepted, closed by the cleanup
	closed  bool
}

func newFixedServer(tb testing.TB) *fixedServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &fixedServer{ln: ln, reached: make(chan struct{}, 1)}
	s.target.Store(1 << 62)
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n\r\nhello, world\n")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					m, err := c.Read(buf)
					if err != nil {
						return
					}
					for k := bytes.Count(buf[:m], []byte("\r\n\r\n")); k > 0; k-- {
						if s.n.Add(1) == s.target.Load() {
							s.reached <- struct{}{}
						}
						if _, err := c.Write(answer); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	tb.Cleanup(s.close)
	return s
}

// close stops the server. Its connections are closed first: a test that
// failed with a loop still holding them (a loop that hung) would
// otherwise wait here for ever, and hold up the package's other tests.
func (s *fixedServer) close() {
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// startLoop runs users on a new engine against srv; stop ends them and
// waits until every loop is done.
func startLoop(tb testing.TB, srv *fixedServer, users int64) (rec *metrics.Recorder, stop func()) {
	return startLoopFail(tb, srv, users, nil)
}

// startLoopFail is startLoop whose loops tell fail of their failure.
func startLoopFail(tb testing.TB, srv *fixedServer, users int64, fail func(error)) (rec *metrics.Recorder, stop func()) {
	p, err := plan.Parse("b.yaml", []byte(`
target: http://`+srv.ln.Addr().String()+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1h, users: 64}]}
`), nil)
	if err != nil {
		tb.Fatal(err)
	}
	prog, err := vu.Compile(p, p.Target, "stampede/bench", nil)
	if err != nil {
		tb.Fatal(err)
	}
	rec = metrics.New(prog.Steps, 1)
	soft := make(chan struct{})
	var wg sync.WaitGroup
	var inflight atomic.Int64
	e, err := New(Config{Prog: prog, Rec: rec, Soft: soft,
		Hold: func() { wg.Add(1) }, Release: wg.Done, Left: func() {}, InFlight: &inflight, Fail: fail})
	if err != nil {
		tb.Fatal(err)
	}
	for id := int64(1); id <= users; id++ {
		tr := e.NewTransport()
		u := prog.NewUser(id, tr, rec)
		e.Start(u, tr, prog.ScenarioFor(id-1), nil)
	}
	return rec, func() {
		close(soft)
		wg.Wait()
		if n := inflight.Load(); n != 0 {
			tb.Errorf("%d requests in flight after every loop ended", n)
		}
	}
}

// Every answer the server gave is recorded once, as a success, and the
// loops end when the run stops.
func TestLoopCountsEveryAnswer(t *testing.T) {
	srv := newFixedServer(t)
	srv.target.Store(2000)
	rec, stop := startLoop(t, srv, 8)
	<-srv.reached
	stop()
	tot := rec.Snapshot().Totals
	if tot.Requests != srv.n.Load() || tot.Failed != 0 || tot.Requests < 2000 {
		t.Errorf("recorded %d requests (%d failed), the server answered %d", tot.Requests, tot.Failed, srv.n.Load())
	}
}

// BenchmarkLoopRequest is the loop engine's cost per request, both ends
// on loopback: 64 users, answers recorded as a run records them. It must
// allocate nothing per request.
func BenchmarkLoopRequest(b *testing.B) {
	srv := newFixedServer(b)
	const warm = 5000
	srv.target.Store(warm)
	_, stop := startLoop(b, srv, 64)
	<-srv.reached
	b.ReportAllocs()
	b.ResetTimer()
	srv.target.Store(srv.n.Load() + int64(b.N))
	<-srv.reached
	b.StopTimer()
	stop()
}
