package run

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
	"github.com/stampede-load/stampede/internal/vu"
)

// Connection scenarios record their timed operations as steps of their own
// metrics.Recorder, so HDR histograms, failure classes and error samples
// work as for HTTP steps, while the run's totals (requests, error rate,
// throughput, latency statistics) stay the HTTP requests': a push latency
// or a 10-minute session is not a request.

// connSteps lists the metric names a connection scenario can record, in
// the order reports show them. The names are the protocol packages' ops
// (signalr.Op, ws.Op), so what is listed here and what is recorded come
// from the same constructors.
func connSteps(sc *plan.Scenario) []string {
	c := sc.Connection.Spec()
	var names []string
	add := func(op fmt.Stringer) {
		n := op.String()
		for _, x := range names {
			if x == n {
				return
			}
		}
		names = append(names, n)
	}
	switch {
	case c.SignalR != nil:
		s := c.SignalR
		if !s.SkipNegotiate {
			// The hop to a redirect (Azure SignalR Service) and a
			// restart after a refused token are timed apart.
			add(signalr.OpNegotiate)
			add(signalr.OpNegotiateRedirect)
			add(signalr.OpNegotiateRestart)
		}
		// Each transport the scenario may run on has its own ops; auto
		// may run on any.
		switch t := signalr.TransportNamed(s.Transport); t {
		case signalr.ServerSentEvents:
			add(signalr.OpSSEOpen)
		case signalr.LongPolling:
			add(signalr.OpPoll)
		case signalr.Auto:
			add(signalr.OpUpgrade)
			add(signalr.OpSSEOpen)
			add(signalr.OpPoll)
		default:
			add(signalr.OpUpgrade)
		}
		add(signalr.OpHandshake)
		for i := range s.Calls {
			add(vu.CallOp(&s.Calls[i]))
		}
		if len(s.Timestamp) > 0 {
			for _, t := range s.Listen {
				add(signalr.PushOp(t))
			}
		}
		add(signalr.OpSession)
	case c.WebSocket != nil:
		add(ws.OpUpgrade)
		for _, st := range c.WebSocket.Steps {
			if st.Kind == plan.WSSend || st.Kind == plan.WSWait {
				add(ws.StepOp(st.Name))
			}
		}
		add(ws.OpSession)
	default:
		add(ws.OpSession)
	}
	return names
}

// connRecorder records one population's operations; it implements
// signalr.Recorder, records ws ops through RecordWS, and is safe for
// concurrent use.
type connRecorder struct {
	rec   *metrics.Recorder
	steps map[string]int
	next  atomic.Int64
	// unlisted counts outcomes of ops that connSteps did not list.
	unlisted atomic.Int64
}

func newConnRecorder(rec *metrics.Recorder, steps map[string]int) *connRecorder {
	return &connRecorder{rec: rec, steps: steps}
}

// Record counts one outcome of a SignalR connection.
func (a *connRecorder) Record(op signalr.Op, class sample.Class, d time.Duration, err error) {
	a.record(op.String(), class, d, err)
}

// RecordWS counts one outcome of a scripted WebSocket connection.
func (a *connRecorder) RecordWS(op ws.Op, class sample.Class, d time.Duration, err error) {
	a.record(op.String(), class, d, err)
}

// Unsent counts a failure of op before anything was sent (its call's
// arguments could not be built): a failure without a latency, as
// metrics.Shard.FailUnsent counts one, not a 0 µs sample.
func (a *connRecorder) Unsent(op signalr.Op, class sample.Class, err error) {
	id, ok := a.steps[op.String()]
	if !ok {
		a.unlisted.Add(1)
		return
	}
	a.rec.Shard(a.next.Add(1)).FailUnsent(id, class, metrics.ErrorText(err))
}

// record counts one outcome. Connections have no user of their own to
// keep a shard, so records go round the shards.
func (a *connRecorder) record(name string, class sample.Class, d time.Duration, err error) {
	id, ok := a.steps[name]
	if !ok {
		// connSteps lists every op the scenario can record, from the same
		// constructors; an op missing there is a bug, counted so a test
		// sees it, and not worth a panic mid-run.
		a.unlisted.Add(1)
		return
	}
	sh := a.rec.Shard(a.next.Add(1))
	if class != sample.OK && err != nil {
		// The failure and its reason are counted together, so a step's
		// messages always add up to its failures.
		sh.FailText(id, class, 0, d, metrics.ErrorText(err))
		return
	}
	sh.Record(id, class, d)
}
