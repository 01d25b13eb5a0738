package run

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// tlsCountServer is a TLS server that counts what a run's result must
// match: connections whose handshake completed, those that resumed, and
// requests answered. answer writes the answer to one request on the
// connection's TLS and says whether to keep the connection; what it
// writes goes to the socket in one write (flush), so that what the
// client reads together is the same on every run.
type tlsCountServer struct {
	ln                 net.Listener
	addr               string
	handshakes, resume atomic.Int64
	requests           atomic.Int64
	stall              bool // no answer: accept, never handshake
	answer             func(tc *tls.Conn, k int64) (keep bool)
	wg                 sync.WaitGroup
	quit               chan struct{}
}

// flushConn gathers writes until flush, so a TLS answer and what follows
// it leave in one write.
type flushConn struct {
	net.Conn
	buf    bytes.Buffer
	direct bool
}

func (c *flushConn) Write(p []byte) (int, error) {
	if c.direct {
		return c.Conn.Write(p)
	}
	return c.buf.Write(p)
}

// SetWriteDeadline is ignored: close_notify sets one to now on its way
// out (crypto/tls), which would fail the flush that sends it.
func (c *flushConn) SetWriteDeadline(time.Time) error { return nil }

func (c *flushConn) flush() error {
	_, err := c.Conn.Write(c.buf.Bytes())
	c.buf.Reset()
	return err
}

func newTLSCountServer(t *testing.T, answer func(tc *tls.Conn, k int64) bool, opts ...func(*tls.Config)) *tlsCountServer {
	t.Helper()
	certs := httptest.NewUnstartedServer(nil)
	certs.StartTLS()
	cfg := &tls.Config{Certificates: certs.TLS.Certificates, NextProtos: []string{"http/1.1"}}
	certs.Close()
	for _, o := range opts {
		o(cfg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tlsCountServer{ln: ln, addr: ln.Addr().String(), answer: answer, stall: answer == nil, quit: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				s.serve(c, cfg)
			}()
		}
	}()
	t.Cleanup(func() { close(s.quit); ln.Close(); s.wg.Wait() })
	return s
}

func (s *tlsCountServer) serve(c net.Conn, cfg *tls.Config) {
	if s.stall {
		<-s.quit
		return
	}
	// The handshake's flights go out as they are written.
	fc := &flushConn{Conn: c, direct: true}
	tc := tls.Server(fc, cfg)
	if tc.Handshake() != nil {
		return
	}
	fc.direct = false
	s.handshakes.Add(1)
	if tc.ConnectionState().DidResume {
		s.resume.Add(1)
	}
	br := bufio.NewReader(tc)
	for {
		if err := readHead(br); err != nil {
			return
		}
		keep := s.answer(tc, s.requests.Add(1))
		if fc.flush() != nil || !keep {
			return
		}
	}
}

func readHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
	}
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

func tlsPlan(t *testing.T, addr, extra string) string {
	t.Helper()
	return `
target: https://` + addr + `
http: {version: http/1.1}
scenarios: {s: {steps: [{get: /, timeout: 10s}]}}
load: {grace: 15s, stages: [{duration: 300ms, users: 4}]}
` + extra
}

// twoStepTLSPlan is tlsPlan's with two requests an iteration, its users
// all started at once (a 1 ms ramp) and then held.
func twoStepTLSPlan(addr string) string {
	return `
target: https://` + addr + `
http: {version: http/1.1}
scenarios: {s: {steps: [{get: /a, timeout: 10s}, {get: /b, timeout: 10s}]}}
load: {grace: 15s, stages: [{duration: 1ms, users: 4}, {duration: 300ms, users: 4}]}
`
}

// runOn runs src with engine, trusting any certificate unless verify (as
// the session does for tls.insecure).
func runOn(t *testing.T, src, engine string, verify bool) *result.Result {
	t.Helper()
	o := Options{Engine: engine, SkipPreflight: true, TLS: &tls.Config{InsecureSkipVerify: !verify}}
	res, err := Run(context.Background(), mustPlan(t, src), o)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if res.Run.Engine != engine {
		t.Fatalf("run.engine = %q, want %q", res.Run.Engine, engine)
	}
	return res
}

// HTTPS over HTTP/1.1 runs on the event loop: every answer the server gave
// is counted once, each user holds one connection, and the handshakes in
// the result's tls block are the server's.
func TestLoopRunsHTTPSKeepAlive(t *testing.T) {
	needLoop(t)
	srv := newTLSCountServer(t, func(tc *tls.Conn, _ int64) bool {
		io.WriteString(tc, okAnswer)
		return true
	})
	res := runOn(t, tlsPlan(t, srv.addr, ""), EngineLoop, false)
	tot := res.Totals
	if tot.Requests != srv.requests.Load() || tot.Failed != 0 || tot.Requests == 0 {
		t.Errorf("result: %d requests, %d failed; server answered %d", tot.Requests, tot.Failed, srv.requests.Load())
	}
	if res.TLS == nil || res.TLS.Handshakes != 4 || res.TLS.Full != 4 || srv.handshakes.Load() != 4 {
		t.Errorf("tls block %+v, server handshakes %d: want 4 full, one per user", res.TLS, srv.handshakes.Load())
	}
}

// A server that closes after every answer makes each request dial anew:
// each user's first handshake is full and every later one resumes from the
// user's own session cache, with either engine, and the counts in the tls
// block are the server's.
func TestEnginesResumeTLSAlike(t *testing.T) {
	needLoop(t)
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		srv := newTLSCountServer(t, func(tc *tls.Conn, _ int64) bool {
			io.WriteString(tc, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
			return false
		})
		// Two requests an iteration: every user makes a second, which
		// resumes, however long its first handshake took (on a busy
		// machine, longer than the stage); counts, not time, say so.
		res := runOn(t, twoStepTLSPlan(srv.addr), engine, false)
		tot, st := res.Totals, res.TLS
		if tot.Requests != srv.requests.Load() || tot.Failed != 0 || tot.Requests < 8 {
			t.Errorf("%s: %d requests (%d failed), server answered %d; want at least 2 for each of 4 users", engine, tot.Requests, tot.Failed, srv.requests.Load())
		}
		if st == nil || st.Handshakes != tot.Requests || st.Handshakes != srv.handshakes.Load() ||
			st.Full != 4 || st.Resumed != st.Handshakes-4 || st.Resumed != srv.resume.Load() {
			t.Errorf("%s: tls %+v for %d requests; server saw %d handshakes, %d resumed", engine, st, tot.Requests, srv.handshakes.Load(), srv.resume.Load())
		}
	}
}

// A body far larger than the socket takes at once goes out over TLS a
// piece at a time on the loop (the next once the socket took the last,
// each turn on the socket's writability) and arrives whole, in order,
// with either engine.
func TestEnginesSendBigBodiesOverTLSAlike(t *testing.T) {
	needLoop(t)
	const size = 4 << 20
	for _, engine := range []string{EngineGoroutines, EngineLoop} {
		var seen, whole atomic.Int64
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			if b, _ := io.ReadAll(r.Body); len(b) == size && bytes.Count(b, []byte("x")) == size {
				whole.Add(1)
			}
			io.WriteString(w, "ok")
		}))
		srv.StartTLS() // HTTP/1.1 only, as the loop speaks
		res := runOn(t, `
target: https://`+srv.Listener.Addr().String()+`
http: {version: http/1.1}
scenarios: {s: {steps: [{post: /, body: "`+strings.Repeat("x", size)+`", timeout: 60s}]}}
load: {grace: 60s, stages: [{duration: 2s, users: 1}]}
`, engine, false)
		// 2 s: a loaded machine's first handshake and 4 MiB write took
		// longer than a 300 ms stage, which then sent nothing.
		srv.Close()
		if tot := res.Totals; tot.Requests == 0 || tot.Failed != 0 || tot.Requests != seen.Load() || whole.Load() != seen.Load() {
			t.Errorf("%s: %d requests (%d failed %v), server saw %d, %d whole", engine, tot.Requests, tot.Failed, tot.ByClass, seen.Load(), whole.Load())
		}
	}
}

// What TLS adds to an answer is judged alike by both engines: a
// close_notify right after it closes the connection and the answer stands;
// application data after it fails the answer as bytes after its end; a
// server that never finishes the handshake times out; one whose
// certificate does not verify fails as tls.
func TestEnginesClassifyTLSAlike(t *testing.T) {
	needLoop(t)
	cases := []struct {
		name    string
		answer  func(tc *tls.Conn, k int64) bool
		stall   bool
		hold    bool
		certReq bool
		grace   bool
		verify  bool
		want    []string
		// closes: every answer came on a connection of its own.
		closes bool
	}{
		{name: "close_notify after the answer", answer: func(tc *tls.Conn, _ int64) bool {
			io.WriteString(tc, okAnswer)
			tc.CloseWrite()
			return false
		}, want: []string{"ok"}, closes: true},
		{name: "data after the answer", answer: func(tc *tls.Conn, _ int64) bool {
			io.WriteString(tc, okAnswer)
			io.WriteString(tc, "stray")
			return true
		}, want: []string{"other"}, closes: true},
		{name: "handshake never finishes", stall: true, want: []string{"timeout"}},
		// The grace ends before the timeout: the handshakes in flight
		// are cut off.
		{name: "handshake cut by the end", stall: true, grace: true, want: []string{"interrupted"}},
		{name: "certificate does not verify", verify: true, want: []string{"tls"}},
		// TLS 1.3: the refusal (an alert) comes after our side of the
		// handshake is done, with the first answer's read.
		{name: "client certificate required", certReq: true, want: []string{"tls"}},
		// Half an answer, then nothing: the request's timeout, read over
		// TLS.
		{name: "partial answer then stall", hold: true, want: []string{"timeout"}},
		// The grace ends while every answer is held: the requests in
		// flight are cut off.
		{name: "answer held past the end", hold: true, grace: true, want: []string{"interrupted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, engine := range []string{EngineGoroutines, EngineLoop} {
				answer := tc.answer
				if answer == nil && !tc.stall {
					answer = func(c *tls.Conn, _ int64) bool { io.WriteString(c, okAnswer); return true }
				}
				held := make(chan struct{})
				if tc.hold {
					answer = func(c *tls.Conn, _ int64) bool {
						if !tc.grace {
							io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
							c.NetConn().(*flushConn).flush()
						}
						<-held
						return false
					}
				}
				var opts []func(*tls.Config)
				if tc.certReq {
					opts = append(opts, func(c *tls.Config) { c.ClientAuth = tls.RequireAnyClientCert })
				}
				srv := newTLSCountServer(t, answer, opts...)
				t.Cleanup(func() { close(held) })
				src := tlsPlan(t, srv.addr, "")
				switch {
				case tc.grace:
					src = strings.Replace(src, "grace: 15s", "grace: 100ms", 1)
				case tc.stall, tc.hold:
					src = strings.Replace(src, "timeout: 10s", "timeout: 300ms", 1)
				}
				res := runOn(t, src, engine, tc.verify)
				if got := classes(res); !slices.Equal(got, tc.want) || res.Totals.Requests == 0 {
					t.Errorf("%s: classes %v of %d requests, want %v (%v)", engine, got, res.Totals.Requests, tc.want, res.Steps[0].Errors)
				}
				if tc.closes && srv.handshakes.Load() != srv.requests.Load() {
					t.Errorf("%s: %d connections for %d requests, want one each", engine, srv.handshakes.Load(), srv.requests.Load())
				}
			}
		})
	}
}

// An open plan over HTTPS runs on the loop: arrivals take the slots'
// kept-alive TLS connections, every answer is counted once, and each
// connection the server saw is one full handshake in the tls block.
func TestLoopRunsHTTPSOpen(t *testing.T) {
	needLoop(t)
	srv := newTLSCountServer(t, func(tc *tls.Conn, _ int64) bool {
		io.WriteString(tc, okAnswer)
		return true
	})
	src := strings.Replace(tlsPlan(t, srv.addr, ""), "{grace: 15s, stages: [{duration: 300ms, users: 4}]}",
		"{max_in_flight: 4, grace: 15s, stages: [{duration: 400ms, rate: 200/s}]}", 1)
	res := runOn(t, src, EngineLoop, false)
	tot, st := res.Totals, res.TLS
	if tot.Requests-tot.ByClass["dropped"] != srv.requests.Load() || srv.requests.Load() == 0 || tot.Failed != tot.ByClass["dropped"] {
		t.Errorf("result: %d requests (%v); server answered %d", tot.Requests, tot.ByClass, srv.requests.Load())
	}
	if st == nil || st.Handshakes != srv.handshakes.Load() || st.Full != st.Handshakes || st.Handshakes > 4 || st.Handshakes == 0 {
		t.Errorf("tls %+v, server handshakes %d: want one full handshake per slot, at most 4", st, srv.handshakes.Load())
	}
}
