//go:build linux

package evloop

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// A user interrupted (the grace's end) while its loop handles the answer
// to its first step sends nothing more: the next step is counted
// interrupted without going on the wire, as a goroutine user's RoundTrip
// after Interrupt. The loop's wake-up for the interrupt is held back (its
// mutex is held) so that the answer is handled first, on the same turn.
func TestLoopSendsNothingAfterInterrupt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, err := plan.Parse("i.yaml", []byte(`
target: http://`+ln.Addr().String()+`
scenarios: {s: {steps: [{get: /a}, {get: /b}]}}
load: {stages: [{duration: 1h, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := vu.Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := metrics.New(prog.Steps, 1)
	soft := make(chan struct{})
	var wg sync.WaitGroup
	var inflight atomic.Int64
	e, err := New(Config{Prog: prog, Rec: rec, Soft: soft, Loops: 1,
		Hold: func() { wg.Add(1) }, Release: wg.Done, Left: func() {}, InFlight: &inflight})
	if err != nil {
		t.Fatal(err)
	}
	tr := e.NewTransport()
	u := prog.NewUser(1, tr, rec)
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			got <- err.Error()
			return
		}
		l := e.loops[0]
		l.mu.Lock()
		go u.Interrupt() // sets the user's flag, then waits for mu to wake the loop
		for !u.Interrupted() {
			time.Sleep(time.Millisecond)
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		// The loop either sends /b (wrong) or, cutting the user off,
		// closes the connection.
		req, err := http.ReadRequest(br)
		l.mu.Unlock()
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			got <- "closed"
		case err != nil:
			got <- err.Error()
		default:
			got <- "sent " + req.URL.Path
		}
	}()
	e.Start(u, tr, prog.ScenarioFor(0), nil)
	select {
	case g := <-got:
		if g != "closed" {
			t.Errorf("after the interrupt the server got: %s, want the connection closed", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no outcome in 30 s")
	}
	close(soft)
	wg.Wait()
	if n := inflight.Load(); n != 0 {
		t.Errorf("%d requests in flight after the loop ended", n)
	}
}
