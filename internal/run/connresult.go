package run

import (
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// SessionStep is the step under which a connection scenario records each
// held connection's session as it ends: ok when we ended it, else the
// disconnect's class, timed over its life. A connection held to the end
// of the run is recorded as the run stops, after new work stopped.
const SessionStep = "session"

// into adds the populations' steps, error samples and summary
// to a result; safe while the run goes on (checkpoints).
func (cr *connRunner) into(res *result.Result) {
	if cr == nil {
		return
	}
	snap := cr.rec.Snapshot()
	for _, st := range snap.Steps {
		if st.Requests == 0 && (st.Name == signalr.OpNegotiateRedirect.String() || st.Name == signalr.OpNegotiateRestart.String()) {
			// Listed for hubs that redirect or refuse tokens; a hub
			// that did neither shows no empty rows for them.
			continue
		}
		res.Steps = append(res.Steps, st)
	}
	res.Samples = append(res.Samples, snap.Errors...)
	out := &result.Connections{}
	for _, p := range cr.pops {
		cs := result.ConnScenario{
			Scenario: p.sc.Name, Protocol: p.kind, Target: len(p.slots),
			Opened: p.opened.Load(), Failed: p.failed.Load(),
			ByClass: map[string]int64{}, PeakOpen: p.peakOpen(), OpenAtEnd: p.openAtEnd(),
			Disconnects: map[string]int64{},
		}
		// An attempt still connecting is neither opened nor failed yet:
		// only finished ones count, so opened + failed = attempts.
		cs.Attempts = cs.Opened + cs.Failed
		for c := range p.byClass {
			if n := p.byClass[c].Load(); n > 0 {
				cs.ByClass[sample.Class(c).String()] = n
			}
		}
		cs.GaveUp, cs.RetryAfter = p.gaveUp.Load(), p.retryAfters.Load()
		cs.AttemptsPerS, cs.WaitingPerS, cs.PeakWaiting = p.retry.snapshot()
		if p.sro != nil {
			// The hubs' Stats add up to the scenario's; its own counts
			// (attempts, opens, failures) are added after.
			for _, h := range p.hubs {
				cs.AddCounts(signalrCounts(h.sro.Stats, p.spec.SignalR.Listen))
			}
			cs.HubProtocol = p.sro.Protocol.String()
			cs.Hubs = p.hubCounts()
		} else {
			cs.AddCounts(wsCounts(&p.wsc, &p.disc))
		}
		out.Scenarios = append(out.Scenarios, cs)
	}
	res.Connections = out
}

// signalrCounts are one hub's counters, as a scenario's.
func signalrCounts(st *signalr.Stats, listen []string) result.ConnScenario {
	cs := wsCounts(&st.Counters, &st.Disconnects)
	cs.Pushes = map[string]int64{}
	for _, t := range listen {
		cs.Pushes[t] = st.Pushes(t)
	}
	cs.OtherPushes = st.OtherPushes.Load()
	cs.Transports = st.ByTransport()
	cs.Fallbacks = st.Fallbacks.Load()
	cs.Reconnects, cs.ReconnectFailures = st.Reconnects.Load(), st.ReconnectFailures.Load()
	cs.Recovered, cs.Duplicates, cs.Lost = st.Recovered.Load(), st.Duplicates.Load(), st.Lost.Load()
	cs.TokenRefusals = st.TokenRefusals.Load()
	cs.ServerCloses, cs.StreamItems = st.CloseCounts(), st.StreamItems()
	return cs
}

// wsCounts are the message and byte counters and the disconnects by
// reason, as a scenario's.
func wsCounts(counters *ws.Counters, disc *[ws.NumReasons]atomic.Int64) result.ConnScenario {
	cs := result.ConnScenario{Disconnects: map[string]int64{}}
	for i := range disc {
		if n := disc[i].Load(); n > 0 {
			cs.Disconnects[ws.Reason(i).String()] = n
		}
	}
	cs.MessagesIn, cs.MessagesOut = counters.MsgsIn.Load(), counters.MsgsOut.Load()
	cs.BytesIn, cs.BytesOut = counters.BytesIn.Load(), counters.BytesOut.Load()
	return cs
}
