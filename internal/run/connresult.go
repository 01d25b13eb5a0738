package run

import (
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// into adds the populations' steps, error samples and summary
// to a result; safe while the run goes on (checkpoints).
func (cr *connRunner) into(res *result.Result) {
	if cr == nil {
		return
	}
	snap := cr.rec.Snapshot()
	res.Steps = append(res.Steps, snap.Steps...)
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
		var counters *ws.Counters
		var disc *[ws.NumReasons]atomic.Int64
		if p.sro != nil {
			st := p.sro.Stats
			counters, disc = &st.Counters, &st.Disconnects
			cs.Pushes = map[string]int64{}
			for _, t := range p.spec.SignalR.Listen {
				cs.Pushes[t] = st.Pushes(t)
			}
			cs.OtherPushes = st.OtherPushes.Load()
			cs.HubProtocol = p.sro.Protocol.String()
			cs.Transports = st.ByTransport()
			cs.Fallbacks = st.Fallbacks.Load()
			cs.Reconnects, cs.ReconnectFailures = st.Reconnects.Load(), st.ReconnectFailures.Load()
			cs.Recovered, cs.Duplicates, cs.Lost = st.Recovered.Load(), st.Duplicates.Load(), st.Lost.Load()
			cs.TokenRenewals = st.TokenRenewals.Load()
			cs.ServerCloses, cs.StreamItems = st.CloseCounts(), st.StreamItems()
		} else {
			counters, disc = &p.wsc, &p.disc
		}
		for i := range disc {
			if n := disc[i].Load(); n > 0 {
				cs.Disconnects[ws.Reason(i).String()] = n
			}
		}
		cs.MessagesIn, cs.MessagesOut = counters.MsgsIn.Load(), counters.MsgsOut.Load()
		cs.BytesIn, cs.BytesOut = counters.BytesIn.Load(), counters.BytesOut.Load()
		out.Scenarios = append(out.Scenarios, cs)
	}
	res.Connections = out
}
