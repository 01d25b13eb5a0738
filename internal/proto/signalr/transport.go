package signalr

import (
	"strings"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// Transport is how hub messages travel (TransportProtocols.md in the
// aspnetcore repository).
type Transport uint8

const (
	WebSockets       Transport = iota // the default: what a load test measures should not depend on the server
	ServerSentEvents                  // events from the server, POSTs to it
	LongPolling                       // polls from the server, POSTs to it
	// Auto takes the first transport the server offers that can carry the
	// protocol, in the order ASP.NET Core clients try them: WebSockets,
	// Server-Sent Events, long polling; one that fails to start falls
	// back to the next, negotiating again.
	Auto
	numTransports
)

var transportNames = [numTransports]string{"websockets", "sse", "long_polling", "auto"}

// negotiateNames are the transports' names in a negotiate answer.
var negotiateNames = [numTransports]string{"WebSockets", "ServerSentEvents", "LongPolling", ""}

// String is the transport's name in a plan and a result.
func (t Transport) String() string {
	if t < numTransports {
		return transportNames[t]
	}
	return "invalid"
}

// TransportNamed is the transport a plan names (websockets, sse,
// long_polling, auto; anything else is WebSockets, the plan parser having
// refused it).
func TransportNamed(name string) Transport {
	for i, n := range transportNames {
		if n == name {
			return Transport(i)
		}
	}
	return WebSockets
}

// transport is what a Conn needs of its transport; *ws.Conn is one.
type transport interface {
	Send(typ ws.MessageType, b []byte) error
	Done() <-chan struct{}
	Disconnect() *ws.Disconnect
	Close(code int, reason string) error
	Abort()
}

// candidates are the transports to try, in order, given what negotiate
// offered (nil offered: negotiate was skipped, which only WebSockets
// allows).
func candidates(want Transport, nr *negotiateResponse, proto Protocol) ([]Transport, error) {
	var out []Transport
	usable := func(t Transport) bool {
		if nr == nil {
			return t == WebSockets
		}
		for _, a := range nr.AvailableTransports {
			if a.Transport != negotiateNames[t] {
				continue
			}
			for _, f := range a.TransferFormats {
				if f == proto.transferFormat() {
					return true
				}
			}
		}
		return false
	}
	if want == Auto {
		for _, t := range []Transport{WebSockets, ServerSentEvents, LongPolling} {
			if usable(t) {
				out = append(out, t)
			}
		}
	} else if usable(want) {
		out = []Transport{want}
	}
	if len(out) > 0 {
		return out, nil
	}
	var offered []string
	if nr != nil {
		for _, t := range nr.AvailableTransports {
			offered = append(offered, t.Transport+"("+strings.Join(t.TransferFormats, ",")+")")
		}
	}
	if len(offered) == 0 {
		offered = []string{"none"}
	}
	need := negotiateNames[want] + "(" + proto.transferFormat() + ")"
	if want == Auto {
		need = "a transport with " + proto.transferFormat()
	}
	return nil, &Error{Phase: "negotiate", Class: sample.Other,
		Msg: "unsupported transport: server offers " + strings.Join(offered, ", ") + "; this scenario needs " + need + " for the " + proto.String() + " hub protocol"}
}
