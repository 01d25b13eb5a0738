// Package evloop runs closed-model HTTP/1.1 users that do not think, and
// open-model arrivals of such steps (Open), on event loops of its own:
// one loop per core the run is given (Config.Loops; for arrivals: at most
// one per slot), each owning many non-blocking sockets that Go's
// netpoller never sees, registered once (edge-triggered), written to
// directly and read on readiness, with one epoll_wait for all that are
// ready. A user costs no goroutine, no wake-up
// through the scheduler and no epoll_ctl per request.
//
// Measurement truth is the goroutine engine's: requests are rendered by
// vu, answers judged by httpc's own parser (httpc.Parser) and recorded by
// vu.User.LoopDone, the code the goroutine engine records through, with
// latency from the start of the request (a connect included, a TLS
// handshake left out: it is a phase of its own, as on the goroutine
// engine), or for an arrival's first request from when it was due.
package evloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/vu"
)

// Name is the engine's name in results and on the command line.
const Name = "loop"

// ErrUnavailable is New's error where the engine does not exist (not
// Linux): the goroutine engine runs instead.
var ErrUnavailable = errors.New("the event-loop engine exists on Linux only")

// errThroughLoop is what a loop user's transport says if anything sends a
// request through it: the loop sends them.
var errThroughLoop = errors.New("evloop: a loop user's requests are sent by its loop")

// Config is what an engine needs of its run.
type Config struct {
	Prog *vu.Program
	// Rec is the run's recorder (the request bytes are rendered as a
	// user of it would render them).
	Rec *metrics.Recorder
	// Soft is closed when no new iteration may start.
	Soft <-chan struct{}
	// Loops is the number of loops (0: GOMAXPROCS). An open model's
	// are its Open.Loops.
	Loops int
	// MaxHeader and MaxKept are the run's http limits (0: defaults).
	MaxHeader, MaxKept int
	// Hold is called once for each loop and each user when it begins and
	// Release when it ends (the run's wait group), so the run's grace
	// waits for them as for goroutine users.
	Hold, Release func()
	// Left is called when a user leaves (the Active gauge).
	Left func()
	// InFlight is the run's gauge of requests on the wire.
	InFlight interface{ Add(int64) int64 }
	// Open, when set, makes the engine serve an open model's arrivals
	// (see Open) instead of users that iterate on their own.
	Open *Open
	// Fail is told of a loop's own failure (its epoll set failing), once
	// for each loop that meets one: that loop ends the requests it holds
	// with the error, counted as failed, lets its users go and leaves; the
	// run should stop, marked partial, naming it. Nil: nobody is told.
	Fail func(error)
	// Shared is the run's HTTP state: an https program's users dial
	// through it (the run's TLS config, each user's own session cache,
	// the run's TLS stats), as goroutine users do.
	Shared *httpc.Shared
}

// Open is an open model run on the loops: each arrival takes an idle
// kept-alive connection (a slot with its own user) of its loop, or a new
// one while fewer than the loop's Max exist, or is dropped
// (Arrivals.Drop), as the goroutine open model does. Each loop serves its
// share of the arrivals, in one epoll_wait for its next arrival's time (a
// timerfd) and the answers that are ready.
type Open struct {
	// Loops is each loop's share of the schedule and of the slots: one
	// loop per element.
	Loops []OpenLoop
	// NewUser makes the user of a new slot, on tr.
	NewUser func(tr *Transport) *vu.User
	// Active is the run's gauge of iterations under way.
	Active func(delta int64)
}

// OpenLoop is one loop's share of an open run.
type OpenLoop struct {
	Arrivals Arrivals
	// Max is how many slots (connections, users) this loop may hold.
	Max int
	// Preopen is how many of them connect before the loop's first
	// arrival (at most Max): the first arrivals find kept-alive
	// connections instead of each waiting for a dial of its own.
	Preopen int
}

// Arrivals is an open run's schedule (a loop's share of it), taken by the loop on its own
// goroutine.
type Arrivals interface {
	// Take returns the next arrival due by horizon (ok false: none is),
	// having counted as dropped those too far behind now to start. A
	// horizon past now starts arrivals a little early, batched; never one
	// before the run's start.
	Take(now, horizon time.Time) (sc *vu.Scenario, due time.Time, ok bool)
	// Next is when the next arrival is due (ok false: the schedule is
	// over).
	Next() (due time.Time, ok bool)
	// Drop counts an arrival no slot was free for.
	Drop(sc *vu.Scenario)
}

// stepReq is a request step with the bytes every user sends for it.
type stepReq struct {
	st      *vu.Step
	req     httpc.Request
	bytes   []byte
	timeout time.Duration
}

type scenario struct {
	steps []stepReq
}

// Transport is a loop user's httpc.Transport: the runner's Interrupt at
// the end of the grace reaches the user's loop through it.
type Transport struct {
	l *loop
	// tls is an https user's TLS dialer (nil for http).
	tls *httpc.LoopTLS
}

// RoundTrip implements httpc.Transport; loop users never call it.
func (t *Transport) RoundTrip(*httpc.Request, *httpc.Response) error { return errThroughLoop }

// Close implements httpc.Transport: the loop closes a user's socket when
// the user leaves.
func (t *Transport) Close() {}

// AddrIneligible says why the engine cannot dial addr ("" when it can):
// it dials one address, resolved once, where the goroutine engine
// resolves at each dial and falls back across all of a name's addresses,
// so a name with several addresses is left to it. IP literals and names
// with one address qualify; a name that does not resolve is left to the
// goroutine engine too, which reports what each dial then meets.
func AddrIneligible(addr string) string { return addrIneligible(addr, net.DefaultResolver) }

func addrIneligible(addr string, res *net.Resolver) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("address %q: %v", addr, err)
	}
	if net.ParseIP(host) != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ips, err := res.LookupIPAddr(ctx, host)
	switch {
	case err != nil:
		return fmt.Sprintf("host %q does not resolve: %v", host, err)
	case len(ips) > 1:
		return fmt.Sprintf("host %q resolves to %d addresses (the loop dials one)", host, len(ips))
	}
	return ""
}
