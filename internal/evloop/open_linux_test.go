//go:build linux

package evloop

import (
	"bytes"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/vu"
)

// listedArrivals is a schedule of given due times, taken on the loop's
// goroutine. It counts the waits the loop had to set a timer for (Next
// answering a time still to come) and closes over after the last.
type listedArrivals struct {
	sc       *vu.Scenario
	due      []time.Time
	k        int
	waits    int
	dropped  int
	overOnce sync.Once
	over     chan struct{}
	// beforeTake, when set, runs as Take is asked for arrival a.k, with
	// the turn's horizon: it may move that arrival's due time and keep the
	// turn busy.
	beforeTake func(a *listedArrivals, horizon time.Time)
}

func (a *listedArrivals) Take(_, horizon time.Time) (*vu.Scenario, time.Time, bool) {
	if a.beforeTake != nil && a.k < len(a.due) {
		a.beforeTake(a, horizon)
	}
	if a.k == len(a.due) || a.due[a.k].After(horizon) {
		return nil, time.Time{}, false
	}
	a.k++
	return a.sc, a.due[a.k-1], true
}

func (a *listedArrivals) Next() (time.Time, bool) {
	if a.k == len(a.due) {
		a.overOnce.Do(func() { close(a.over) })
		return time.Time{}, false
	}
	if time.Until(a.due[a.k]) > 0 {
		a.waits++
	}
	return a.due[a.k], true
}

func (a *listedArrivals) Drop(*vu.Scenario) { a.dropped++ }

// runOpenLoop runs arrivals at due on one loop against srv until the last
// was taken and every request answered, and returns the recorder.
func runOpenLoop(t *testing.T, srv *fixedServer, arr *listedArrivals, slots int) *metrics.Recorder {
	t.Helper()
	return runOpenLoopWith(t, srv.ln.Addr().String(), arr, OpenLoop{Max: slots}, func() {})
}

// runOpenLoopWith is runOpenLoop against addr with the loop's share ol
// (its Arrivals are arr), calling made for each user (slot) made.
func runOpenLoopWith(t *testing.T, addr string, arr *listedArrivals, ol OpenLoop, made func()) *metrics.Recorder {
	t.Helper()
	rig := prepareOpenLoop(t, addr, arr, ol, made)
	rig.e.Launch()
	return rig.finish()
}

// openRig is one prepared open loop and what its test needs to end it.
type openRig struct {
	e      *Engine
	rec    *metrics.Recorder
	arr    *listedArrivals
	soft   chan struct{}
	wg     *sync.WaitGroup
	active *atomic.Int64
}

// prepareOpenLoop prepares (Prepare: not launched) one loop taking arr
// against addr with the loop's share ol.
func prepareOpenLoop(t *testing.T, addr string, arr *listedArrivals, ol OpenLoop, made func()) *openRig {
	t.Helper()
	p, err := plan.Parse("o.yaml", []byte(`
target: http://`+addr+`
scenarios: {s: {steps: [{get: /}]}}
load: {stages: [{duration: 1h, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := vu.Compile(p, p.Target, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	rig := &openRig{rec: metrics.New(prog.Steps, 1), arr: arr, soft: make(chan struct{}), wg: new(sync.WaitGroup), active: new(atomic.Int64)}
	arr.sc, arr.over = prog.ScenarioFor(0), make(chan struct{})
	ol.Arrivals = arr
	var inflight, ids atomic.Int64
	rig.e, err = Prepare(Config{Prog: prog, Rec: rig.rec, Soft: rig.soft,
		Hold: func() { rig.wg.Add(1) }, Release: rig.wg.Done, Left: func() {}, InFlight: &inflight,
		Open: &Open{
			Loops: []OpenLoop{ol},
			NewUser: func(tr *Transport) *vu.User {
				made()
				return prog.NewUser(ids.Add(1), tr, rig.rec)
			},
			Active: func(d int64) { rig.active.Add(d) },
		}})
	if err != nil {
		t.Fatal(err)
	}
	return rig
}

// finish waits for the launched loop to take every arrival and end its
// iterations, stops it and returns the recorder.
func (rig *openRig) finish() *metrics.Recorder {
	<-rig.arr.over
	// Every arrival was taken, each started (Active) before the last
	// Next; the run stops once their iterations are over.
	for rig.active.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	close(rig.soft)
	rig.wg.Wait()
	return rig.rec
}

// Prepare opens a loop's Preopen slots before it returns and takes no
// arrival until Launch: the run starts its schedule's clock between the
// two. Before, the loop opened them in its first turn, on that clock, so
// its first arrivals were late by every dial (30 to 40 ms for 1,000).
func TestPrepareOpensSlotsBeforeLaunch(t *testing.T) {
	addr, accepted := newAcceptCounter(t)
	const preopen = 6
	var made atomic.Int64
	arr := &listedArrivals{due: []time.Time{time.Now()}}
	rig := prepareOpenLoop(t, addr, arr, OpenLoop{Max: 16, Preopen: preopen}, func() { made.Add(1) })
	if got := made.Load(); got != preopen {
		t.Errorf("%d slots made when Prepare returned, want %d", got, preopen)
	}
	// Connected by then: the server's accept loop may trail the
	// client's connect, so wait for its count, bounded.
	for i := 0; i < 2000 && accepted.Load() < preopen; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := accepted.Load(); got != preopen {
		t.Errorf("the server accepted %d connections before Launch, want %d", got, preopen)
	}
	if arr.k != 0 {
		t.Errorf("%d arrivals taken before Launch, want none", arr.k)
	}
	rig.e.Launch()
	if tot := rig.finish().Snapshot().Totals; tot.Requests != 1 || tot.Failed != 0 || made.Load() != preopen {
		t.Errorf("recorded %d requests (%d failed) on %d slots; want 1 on one of the %d pre-opened", tot.Requests, tot.Failed, made.Load(), preopen)
	}
}

// An arrival that finds every slot busy while the loop's last wait left
// answers unread (it filled the event buffer) waits for the next turn,
// which reads them, instead of dialing; with none left unread it dials.
// Before, it dialed at once: after a stall a turn started twice the
// requests its wait read answers for, so every start dialed, and a 2 ms
// stall at 20,000/s grew to 50 ms of lateness and 2,500 connections.
func TestOpenLoopReadsAnswersBeforeDialing(t *testing.T) {
	addr, _ := newAcceptCounter(t)
	var made atomic.Int64
	arr := &listedArrivals{due: []time.Time{time.Now()}}
	rig := prepareOpenLoop(t, addr, arr, OpenLoop{Max: 4}, func() { made.Add(1) })
	// Not launched: the loop's state is this goroutine's.
	l := rig.e.loops[0]
	l.answersLeft = true
	l.arrive()
	if arr.k != 0 || made.Load() != 0 || !l.tick {
		t.Errorf("with answers unread: %d arrivals taken, %d slots made, another turn asked %v; want none taken, none made, a turn asked", arr.k, made.Load(), l.tick)
	}
	l.answersLeft = false
	l.arrive()
	if arr.k != 1 || made.Load() != 1 {
		t.Errorf("with every answer read: %d arrivals taken, %d slots made; want the arrival on a new slot", arr.k, made.Load())
	}
	rig.e.Launch()
	if tot := rig.finish().Snapshot().Totals; tot.Requests != 1 || tot.Failed != 0 {
		t.Errorf("recorded %d requests (%d failed), want the one arrival answered", tot.Requests, tot.Failed)
	}
}

// Arrivals due within a millisecond of one another start in one turn of
// the loop, behind one setting of its timer: a pair 200 µs apart costs one
// wait, where a wake-up per arrival cost two (the open model's cost was
// its wake-ups). None is lost or dropped for it.
func TestOpenLoopBatchesCloseArrivals(t *testing.T) {
	srv := newFixedServer(t)
	const pairs = 40
	first := time.Now().Add(5 * time.Millisecond)
	arr := &listedArrivals{}
	for j := 0; j < pairs; j++ {
		at := first.Add(time.Duration(j) * 5 * time.Millisecond)
		arr.due = append(arr.due, at, at.Add(200*time.Microsecond))
	}
	rec := runOpenLoop(t, srv, arr, 2*pairs)
	tot := rec.Snapshot().Totals
	if tot.Requests != 2*pairs || tot.Failed != 0 || arr.dropped != 0 || srv.n.Load() != 2*pairs {
		t.Errorf("recorded %d requests (%d failed), dropped %d, server answered %d; want %d each, none failed or dropped",
			tot.Requests, tot.Failed, arr.dropped, srv.n.Load(), 2*pairs)
	}
	if arr.waits > pairs {
		t.Errorf("the loop waited %d times for %d pairs of arrivals 200 µs apart: an arrival was not batched with its pair", arr.waits, pairs)
	}
}

// An arrival started in a turn that its earlier starts kept busy past the
// arrival's due time was sent late, and its latency counts from its due
// time, lateness included. Before, the turn read the clock once: an
// arrival due within the batch's millisecond counted from its send as if
// early, though sent 5 ms late (recorded 322 µs).
func TestOpenLoopLateInABusyTurnCountsItsLateness(t *testing.T) {
	srv := newFixedServer(t)
	first := time.Now().Add(5 * time.Millisecond)
	arr := &listedArrivals{due: []time.Time{first, {}}}
	arr.beforeTake = func(a *listedArrivals, horizon time.Time) {
		if a.k == 1 && a.due[1].IsZero() {
			// Due within this turn's batch, half a millisecond before its
			// horizon; then the turn is kept busy past it.
			a.due[1] = horizon.Add(-500 * time.Microsecond)
			time.Sleep(5 * time.Millisecond)
		}
	}
	rec := runOpenLoop(t, srv, arr, 2)
	snap := rec.Snapshot()
	if snap.Totals.Requests != 2 {
		t.Fatalf("recorded %d requests, want 2", snap.Totals.Requests)
	}
	// Both latencies are at least 4.5 ms: the first's answer waits for
	// the busy turn, the second was sent 4.5 ms after its due time. Lower
	// bounds, which a slower machine only raises.
	if least := time.Duration(snap.Totals.LatencyAll.MinUS) * time.Microsecond; least < 4500*time.Microsecond {
		t.Errorf("smallest latency %v: the arrival sent 4.5 ms late lost its lateness", least)
	}
}

// A loop with Preopen connects that many slots before it takes its first
// arrival: the users (one per slot) are made and their connections
// accepted before any request is sent, and the arrival takes one of them
// instead of dialing. Before, a slot was made and dialed only when an
// arrival came for it: none at the first Take, one connection in all.
func TestOpenLoopPreopensBeforeTheFirstArrival(t *testing.T) {
	addr, accepted := newAcceptCounter(t)
	const preopen = 6
	var made atomic.Int64
	madeAtFirstTake := int64(-1)
	arr := &listedArrivals{due: []time.Time{time.Now().Add(5 * time.Millisecond)}}
	arr.beforeTake = func(*listedArrivals, time.Time) {
		if madeAtFirstTake < 0 {
			madeAtFirstTake = made.Load()
		}
	}
	rec := runOpenLoopWith(t, addr, arr, OpenLoop{Max: 16, Preopen: preopen}, func() { made.Add(1) })
	if madeAtFirstTake != preopen {
		t.Errorf("%d slots made before the first arrival was taken, want %d", madeAtFirstTake, preopen)
	}
	if tot := rec.Snapshot().Totals; tot.Requests != 1 || tot.Failed != 0 || made.Load() != preopen {
		t.Errorf("recorded %d requests (%d failed) on %d slots; want 1 request on one of the %d pre-opened", tot.Requests, tot.Failed, made.Load(), preopen)
	}
	// Every pre-opened connection reached the server (its accept loop
	// may trail the client's connect, so wait for the count, bounded).
	for i := 0; i < 2000 && accepted.Load() < preopen; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := accepted.Load(); got != preopen {
		t.Errorf("the server accepted %d connections, want the %d pre-opened and no dial of the arrival's own", got, preopen)
	}
}

// newAcceptCounter is a server answering every request at once, as
// fixedServer, that counts the connections it accepted.
func newAcceptCounter(t *testing.T) (addr string, accepted *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	var wg sync.WaitGroup
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					m, err := c.Read(buf)
					if err != nil {
						return
					}
					for k := bytes.Count(buf[:m], []byte("\r\n\r\n")); k > 0; k-- {
						if _, err := c.Write(answer); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String(), accepted
}

// A target that refuses connections leaves nothing pre-opened and no
// error of the pre-opening's own: the loop's one arrival dials for itself
// and its refusal is the run's one failed request.
func TestOpenLoopPreopenAgainstARefusingTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var made atomic.Int64
	madeAtFirstTake := int64(-1)
	arr := &listedArrivals{due: []time.Time{time.Now().Add(5 * time.Millisecond)}}
	arr.beforeTake = func(*listedArrivals, time.Time) {
		if madeAtFirstTake < 0 {
			madeAtFirstTake = made.Load()
		}
	}
	rec := runOpenLoopWith(t, addr, arr, OpenLoop{Max: 16, Preopen: 6}, func() { made.Add(1) })
	if madeAtFirstTake != 0 {
		t.Errorf("%d slots made before the first arrival against a refusing target, want 0", madeAtFirstTake)
	}
	if tot := rec.Snapshot().Totals; tot.Requests != 1 || tot.Failed != 1 || arr.dropped != 0 {
		t.Errorf("recorded %d requests (%d failed), dropped %d; want the one arrival, failed, none dropped", tot.Requests, tot.Failed, arr.dropped)
	}
}

// Discard closes what Prepare opened for an engine never launched (a run
// stopped while it waited for its start time): the pre-opened sockets
// and the loop's own files, none left open.
func TestDiscardClosesWhatPrepareOpened(t *testing.T) {
	addr, accepted := newAcceptCounter(t)
	before := openFiles(t)
	rig := prepareOpenLoop(t, addr, &listedArrivals{due: []time.Time{time.Now()}}, OpenLoop{Max: 16, Preopen: 6}, func() {})
	for i := 0; i < 2000 && accepted.Load() < 6; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := openFiles(t); got < before+6 {
		t.Fatalf("%d files open after Prepare, want at least %d more than the %d before", got, 6, before)
	}
	rig.e.Discard()
	// The server's side of each closes once it reads the close (its
	// goroutines trail the client's), so wait for the count, bounded.
	for i := 0; i < 2000 && openFiles(t) > before; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := openFiles(t); got != before {
		t.Errorf("%d files open after Discard, want the %d before Prepare", got, before)
	}
}

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
