package result

import "slices"

// Connections summarises the persistent-connection scenarios of a run
// (WebSocket and SignalR populations). Their timed operations (negotiate,
// upgrade, handshake, invoke METHOD, push TARGET, session, ...) are steps
// of their scenario in Result.Steps, with Group "signalr" or "websocket",
// and are not part of Totals, which stay the HTTP requests'.
type Connections struct {
	Scenarios []ConnScenario `json:"scenarios"`
}

// ConnScenario is one population of connections.
type ConnScenario struct {
	Scenario string `json:"scenario"`
	Protocol string `json:"protocol"` // "signalr" or "websocket"
	// Target is the connections the scenario holds at the profile's peak
	// (this segment's share).
	Target int `json:"target"`
	// Attempts is every connection attempt; each either Opened or Failed,
	// and Failed sums over ByClass.
	Attempts int64            `json:"attempts"`
	Opened   int64            `json:"opened"`
	Failed   int64            `json:"failed"`
	ByClass  map[string]int64 `json:"by_class"`
	// PeakOpen is the most connections open at once; OpenAtEnd those
	// still open when the run ended (and were then closed by us).
	PeakOpen  int64 `json:"peak_open"`
	OpenAtEnd int64 `json:"open_at_end"`
	// Disconnects counts connections that ended during the run, by
	// reason: client_close (the script or a ramp down ended them),
	// server_close (the peer sent a close), ping_timeout, network_reset,
	// protocol_error, write_failed, token_refused (SignalR: the server
	// refused the access token with 401). Each opened connection ends
	// once, so Opened = OpenAtEnd + the sum of Disconnects.
	Disconnects map[string]int64 `json:"disconnects,omitempty"`
	// Pushes counts server pushes per listened target (SignalR);
	// OtherPushes those to targets the plan does not listen to.
	Pushes      map[string]int64 `json:"pushes,omitempty"`
	OtherPushes int64            `json:"other_pushes,omitempty"`
	// HubProtocol is a SignalR scenario's hub protocol (json or
	// messagepack); Transports counts its opened connections by the
	// transport each ran on (websockets, sse, long_polling); Fallbacks
	// the transports that failed to start before auto tried the next.
	HubProtocol string           `json:"hub_protocol,omitempty"`
	Transports  map[string]int64 `json:"transports,omitempty"`
	Fallbacks   int64            `json:"fallbacks,omitempty"`
	// Stateful reconnect (SignalR, stateful_reconnect: true): sockets
	// resumed after a cut and those that could not be; our messages
	// recovered (sent again after a resume); server messages received
	// twice and skipped; messages known lost (ours unacknowledged when a
	// resume failed, and gaps the server resumed past).
	Reconnects        int64 `json:"stateful_reconnects,omitempty"`
	ReconnectFailures int64 `json:"stateful_reconnect_failures,omitempty"`
	Recovered         int64 `json:"recovered,omitempty"`
	Duplicates        int64 `json:"duplicates,omitempty"`
	Lost              int64 `json:"lost,omitempty"`
	// TokenRefusals counts connections ended because the server refused
	// their access token (a 401 to a poll, a send or a stateful
	// reconnect's dial), as with an Azure SignalR Service redirect's
	// token past its expiry; each restarts from negotiate, as the official
	// clients do ("negotiate restart" times those negotiates).
	TokenRefusals int64 `json:"token_refusals,omitempty"`
	// ServerCloses counts connections a SignalR Close message ended, by
	// kind: graceful (no error) and error, and of those, allow_reconnect
	// (the server invited the client back). StreamItems counts the items
	// of the scenario's streams, by streamed method.
	ServerCloses map[string]int64 `json:"server_closes,omitempty"`
	StreamItems  map[string]int64 `json:"stream_items,omitempty"`
	// GaveUp counts slots that spent their attempts in a row (reconnect:
	// attempts) and stopped for the rest of the run.
	GaveUp int64 `json:"gave_up,omitempty"`
	// RetryAfter counts the waits to retry that a server's Retry-After
	// lengthened (the wait is at least what the server asked for).
	RetryAfter int64 `json:"retry_after,omitempty"`
	// PeakWaiting is the most connections waiting to retry at once: the
	// largest of WaitingPerS. Merged segments add their WaitingPerS
	// second by second on the merged clock and take the largest sum
	// (segments follow one schedule, so their waits overlap as in one
	// process; an upper bound where they do not).
	PeakWaiting int64 `json:"peak_waiting"`
	// AttemptsPerS counts the connection attempts started in each second
	// from the run's start; once the run is over they sum to Attempts.
	AttemptsPerS []int64 `json:"attempts_per_s,omitempty"`
	// WaitingPerS is, for each second from the run's start, the most
	// connections waiting to retry at once.
	WaitingPerS []int64 `json:"waiting_per_s,omitempty"`
	// Hubs counts a scenario spread over several hub URLs (urls:) hub by
	// hub, in the plan's order.
	Hubs        []HubCount `json:"hubs,omitempty"`
	MessagesIn  int64      `json:"messages_in"`
	MessagesOut int64      `json:"messages_out"`
	BytesIn     int64      `json:"bytes_in"`
	BytesOut    int64      `json:"bytes_out"`
}

// HubCount is one hub URL's share of a scenario: the connections opened
// on it and the attempts that failed, the most open at once and those
// open at the end, and the pushes it sent (to any target). Opened and
// Failed sum over the hubs to the scenario's.
type HubCount struct {
	// URL is the hub's URL as the plan wrote it, without its query.
	URL string `json:"url"`
	// Opened counts the connections opened on this hub.
	Opened int64 `json:"opened"`
	// Failed counts the attempts on this hub that never opened.
	Failed int64 `json:"failed"`
	// PeakOpen is the most connections open on this hub at once.
	PeakOpen int64 `json:"peak_open"`
	// OpenAtEnd counts this hub's connections still open when the run
	// ended.
	OpenAtEnd int64 `json:"open_at_end"`
	// Pushes counts the pushes this hub sent, to any target.
	Pushes int64 `json:"pushes"`
}

// AddHubs adds in's hubs to hubs by URL, keeping the order first seen.
// Every count adds up; PeakOpen too, as a scenario's (segments run
// together).
func AddHubs(hubs, in []HubCount) []HubCount {
	for _, h := range in {
		i := slices.IndexFunc(hubs, func(x HubCount) bool { return x.URL == h.URL })
		if i < 0 {
			hubs = append(hubs, HubCount{URL: h.URL})
			i = len(hubs) - 1
		}
		m := &hubs[i]
		m.Opened += h.Opened
		m.Failed += h.Failed
		m.PeakOpen += h.PeakOpen
		m.OpenAtEnd += h.OpenAtEnd
		m.Pushes += h.Pushes
	}
	return hubs
}

// AddCounts adds s's counters of events (attempts, opens, failures by
// class, disconnects, pushes, reconnects, messages, bytes) to c. What a
// population is at one moment (Target, PeakOpen, OpenAtEnd) is left to the
// caller: segments running together add those, levels running one after
// another do not. One list of counters, so a counter added to the format
// is summed alike by every merge.
func (c *ConnScenario) AddCounts(s ConnScenario) {
	c.Attempts += s.Attempts
	c.Opened += s.Opened
	c.Failed += s.Failed
	c.ByClass = AddCounts(c.ByClass, s.ByClass)
	c.Disconnects = AddCounts(c.Disconnects, s.Disconnects)
	c.ServerCloses = AddCounts(c.ServerCloses, s.ServerCloses)
	c.StreamItems = AddCounts(c.StreamItems, s.StreamItems)
	c.Pushes = AddCounts(c.Pushes, s.Pushes)
	c.OtherPushes += s.OtherPushes
	c.Transports = AddCounts(c.Transports, s.Transports)
	c.Fallbacks += s.Fallbacks
	c.Reconnects += s.Reconnects
	c.ReconnectFailures += s.ReconnectFailures
	c.Recovered += s.Recovered
	c.Duplicates += s.Duplicates
	c.Lost += s.Lost
	c.TokenRefusals += s.TokenRefusals
	c.GaveUp += s.GaveUp
	c.RetryAfter += s.RetryAfter
	c.MessagesIn += s.MessagesIn
	c.MessagesOut += s.MessagesOut
	c.BytesIn += s.BytesIn
	c.BytesOut += s.BytesOut
}
