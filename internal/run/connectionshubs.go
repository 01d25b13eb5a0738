package run

import (
	"crypto/tls"
	"sync/atomic"

	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/proto/signalr"
	"github.com/stampede-load/stampede/internal/result"
)

// A SignalR population may spread its connections over several hub URLs
// (urls:). Each hub has options of its own, so its Stats count its opens,
// pushes and ends apart and a fleet larger than one hub process can be
// checked hub by hub; the population's figures are the hubs' sums.

// hubPop is one hub URL of a population.
type hubPop struct {
	name           string
	url            *plan.Template
	sro            *signalr.Options
	opened, failed atomic.Int64
}

// hubOfSlot is the hub a slot connects to: round robin by the slot, or
// by its tenant (a tenant's connections on one hub). The slot's index is
// the whole population's, so every segment spreads alike.
func hubOfSlot(spec *plan.SignalRSpec, idx, tenant int) uint16 {
	if spec == nil || len(spec.URLs) < 2 {
		return 0
	}
	n := len(spec.URLs)
	if spec.Spread == plan.SpreadTenant && tenant > 0 {
		return uint16((tenant - 1) % n)
	}
	return uint16(idx % n)
}

// setupHubs makes each hub's options.
func (p *population) setupHubs(tlsConf *tls.Config) {
	s := p.spec.SignalR
	urls := s.URLs
	if len(urls) == 0 {
		urls = []*plan.Template{s.URL}
	}
	for _, u := range urls {
		o := &signalr.Options{
			AccessToken:           s.AccessToken,
			WebSocketTokenInQuery: s.WebSocketTokenInQuery,
			SkipNegotiate:         s.SkipNegotiate,
			Protocol:              signalr.ProtocolNamed(s.Protocol),
			Transport:             signalr.TransportNamed(s.Transport),
			NegotiateTimeout:      s.NegotiateTimeout,
			HandshakeTimeout:      s.HandshakeTimeout,
			KeepAlive:             s.KeepAlive,
			ServerTimeout:         s.ServerTimeout,
			TimestampPath:         s.Timestamp,
			StatefulReconnect:     s.StatefulReconnect,
			Stats:                 signalr.NewStats(s.Listen...),
			Recorder:              p.rec,
			// The client clones the config for negotiate and again,
			// offering only http/1.1, for the upgrade: the run's config
			// is shared with the HTTP users' transport and must not be
			// written to.
			TLS: tlsConf,
		}
		p.hubs = append(p.hubs, &hubPop{name: plan.HubName(u), url: u, sro: o})
	}
	p.sro = p.hubs[0].sro
}

// sumHubs adds get over the hubs' Stats.
func (p *population) sumHubs(get func(*signalr.Stats) int64) int64 {
	var n int64
	for _, h := range p.hubs {
		n += get(h.sro.Stats)
	}
	return n
}

// hubCounts are the hubs' result lines; nil for a single URL.
func (p *population) hubCounts() []result.HubCount {
	if len(p.spec.SignalR.URLs) == 0 {
		return nil
	}
	out := make([]result.HubCount, 0, len(p.hubs))
	for _, h := range p.hubs {
		st := h.sro.Stats
		hc := result.HubCount{URL: h.name, Opened: h.opened.Load(), Failed: h.failed.Load(),
			PeakOpen: st.PeakOpen.Load(), OpenAtEnd: st.ClosedAtEnd.Load(), Pushes: st.OtherPushes.Load()}
		// Every push the hub sent, listened to or not.
		for _, t := range p.spec.SignalR.Listen {
			hc.Pushes += st.Pushes(t)
		}
		out = append(out, hc)
	}
	return out
}
