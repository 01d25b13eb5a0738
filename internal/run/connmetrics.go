package run

import (
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
)

// Connection scenarios record their timed operations as steps of their own
// metrics.Recorder, so HDR histograms, failure classes and error samples
// work as for HTTP steps, while the run's totals (requests, error rate,
// throughput, latency statistics) stay the HTTP requests': a push latency
// or a 10-minute session is not a request.

// connSteps lists the metric names a connection scenario can record, in
// the order reports show them. The names are the SignalR client's
// (signalr.Recorder) and, for WebSocket scripts, "upgrade", each send and
// wait step's name, and "session".
func connSteps(sc *plan.Scenario) []string {
	c := sc.Connection.Spec()
	var names []string
	add := func(n string) {
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
			add("negotiate")
		}
		add("upgrade")
		add("handshake")
		for _, call := range s.Calls {
			add([...]string{"invoke ", "send ", "stream "}[call.Mode] + call.Method)
		}
		if len(s.Timestamp) > 0 {
			for _, t := range s.Listen {
				add("push " + t)
			}
		}
	case c.WebSocket != nil:
		add("upgrade")
		for _, st := range c.WebSocket.Steps {
			if st.Kind == plan.WSSend || st.Kind == plan.WSWait {
				add(st.Name)
			}
		}
	}
	add("session")
	return names
}

// connRecorder records one population's operations; it implements
// signalr.Recorder and is safe for concurrent use.
type connRecorder struct {
	rec   *metrics.Recorder
	steps map[string]int
	next  atomic.Int64
}

func newConnRecorder(rec *metrics.Recorder, steps map[string]int) *connRecorder {
	return &connRecorder{rec: rec, steps: steps}
}

// Record counts one outcome. Connections have no user of their own to
// keep a shard, so records go round the shards.
func (a *connRecorder) Record(name string, class sample.Class, d time.Duration, err error) {
	id, ok := a.steps[name]
	if !ok {
		// Every name the clients use is listed by connSteps; a new one
		// would be a bug there, and is not worth a panic mid-run.
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
