package result

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
	// server_close, ping_timeout, network_reset, protocol_error,
	// write_failed. Each opened connection ends once, so Opened =
	// OpenAtEnd + the sum of Disconnects.
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
	// TokenRenewals counts access tokens (Azure SignalR Service style
	// redirects) renewed by negotiating again, before expiry or on a 401.
	TokenRenewals int64 `json:"token_renewals,omitempty"`
	// ServerCloses counts connections a SignalR Close message ended, by
	// kind: graceful (no error) and error, and of those, allow_reconnect
	// (the server invited the client back). StreamItems counts the items
	// of the scenario's streams, by streamed method.
	ServerCloses map[string]int64 `json:"server_closes,omitempty"`
	StreamItems  map[string]int64 `json:"stream_items,omitempty"`
	MessagesIn   int64            `json:"messages_in"`
	MessagesOut  int64            `json:"messages_out"`
	BytesIn      int64            `json:"bytes_in"`
	BytesOut     int64            `json:"bytes_out"`
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
	c.TokenRenewals += s.TokenRenewals
	c.MessagesIn += s.MessagesIn
	c.MessagesOut += s.MessagesOut
	c.BytesIn += s.BytesIn
	c.BytesOut += s.BytesOut
}
