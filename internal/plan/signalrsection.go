package plan

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// The signalr: section of a connection scenario.

var signalrKeys = []string{"url", "access_token", "access_token_in", "headers", "skip_negotiate", "keep_alive", "server_timeout",
	"handshake_timeout", "negotiate_timeout", "invoke", "listen", "timestamp", "hold", "reconnect", "protocol", "transport", "stateful_reconnect", "urls", "spread"}

// signalrProtocols are the hub protocols a signalr section may name.
var signalrProtocols = []string{"json", "messagepack"}

// signalrTransports are the transports a signalr section may name.
var signalrTransports = []string{"websockets", "sse", "long_polling", "auto"}

// tokenPlaces are where a WebSocket may carry its access token.
var tokenPlaces = []string{"header", "query"}

func (p *parser) signalrSection(s *Scenario, n *yaml.Node) {
	c := p.connection(s, n, KindSignalR)
	if c == nil {
		return
	}
	spec := &SignalRSpec{Pos: p.pos(deref(n))}
	c.SignalR = spec
	sc := p.scope(nil)
	f := p.fields(n, "signalr section", signalrKeys)
	if e, ok := f["url"]; ok {
		spec.URL = p.connURL(e.v, sc, []string{"http", "https", "ws", "wss"})
	} else if _, many := f["urls"]; !many && deref(n).Kind == yaml.MappingNode && p.missing(n, "url") {
		p.errf(deref(n), "signalr section has no url: expected url: /hubs/NAME or an absolute hub URL")
	} else if isNull(deref(n)) {
		p.errf(deref(n), "signalr section is empty: expected {url: /hubs/NAME, invoke: [...], listen: [...]}")
	}
	p.hubURLs(spec, f, sc)
	if e, ok := f["access_token"]; ok {
		spec.AccessToken, _ = p.text(e.v, "access_token")
	}
	if e, ok := f["headers"]; ok {
		spec.Headers = p.connHeaders(e.v, sc)
	} else {
		spec.Headers = append([]Header(nil), p.plan.Defaults.Headers...)
	}
	if e, ok := f["skip_negotiate"]; ok {
		spec.SkipNegotiate, _ = p.boolean(e.v, "skip_negotiate")
	}
	p.hubWire(spec, f)
	p.hubTimeouts(spec, f)
	if e, ok := f["invoke"]; ok {
		items, _ := p.list(e.v, "invoke")
		for _, it := range items {
			if call, ok := p.hubCall(it, sc); ok {
				spec.Calls = append(spec.Calls, call)
			}
		}
	}
	if e, ok := f["listen"]; ok {
		spec.Listen = p.hubListen(e.v)
	}
	if e, ok := f["timestamp"]; ok {
		p.hubTimestamp(spec, e, f["listen"].v != nil)
	}
	if e, ok := f["hold"]; ok {
		spec.Hold, _ = p.holdValue(e.v)
	}
	if e, ok := f["reconnect"]; ok {
		p.reconnect(c, e.v)
	}
	p.noData(sc, spec.Pos)
}

// hubWire reads how the hub's messages travel: the protocol, the
// transport and stateful reconnect, each checked against the others.
func (p *parser) hubWire(spec *SignalRSpec, f map[string]kv) {
	if e, ok := f["protocol"]; ok {
		if v, ok := p.text(e.v, "protocol"); ok {
			if slices.Contains(signalrProtocols, v) {
				spec.Protocol = v
			} else {
				p.errf(e.v, "%s", suggestion("bad hub protocol "+q(v)+": expected json or messagepack", v, signalrProtocols))
			}
		}
	}
	if e, ok := f["transport"]; ok {
		if v, ok := p.text(e.v, "transport"); ok {
			switch {
			case !slices.Contains(signalrTransports, v):
				p.errf(e.v, "%s", suggestion("bad transport "+q(v)+": expected websockets, sse, long_polling or auto", v, signalrTransports))
			case v == "sse" && spec.Protocol == "messagepack":
				p.errf(e.v, "transport sse carries text only and cannot carry the messagepack protocol: use long_polling, websockets or auto")
			case v != "websockets" && v != "auto" && spec.SkipNegotiate:
				p.errf(e.v, "transport %s needs negotiate, but skip_negotiate is set: only websockets can skip it", v)
			default:
				spec.Transport = v
			}
		}
	}
	if e, ok := f["access_token_in"]; ok {
		p.tokenPlace(spec, e.v)
	}
	if e, ok := f["stateful_reconnect"]; ok {
		if v, ok := p.boolean(e.v, "stateful_reconnect"); ok && v {
			switch {
			case spec.SkipNegotiate:
				p.errf(e.v, "stateful_reconnect needs negotiate, but skip_negotiate is set")
			case spec.Transport == "sse" || spec.Transport == "long_polling":
				p.errf(e.v, "stateful_reconnect works over websockets only, not %s", spec.Transport)
			default:
				spec.StatefulReconnect = true
			}
		}
	}
}

// tokenPlace reads where the WebSocket carries its access token: the
// upgrade's Authorization header (default, as the .NET client and the
// JavaScript client in Node send it) or the URL's query (as browsers
// must). The other transports carry it where the JavaScript client does.
func (p *parser) tokenPlace(spec *SignalRSpec, n *yaml.Node) {
	v, ok := p.text(n, "access_token_in")
	switch {
	case !ok:
	case !slices.Contains(tokenPlaces, v):
		p.errf(n, "%s", suggestion("bad access_token_in "+q(v)+": expected header (the .NET client's and Node's way) or query (a browser's)", v, tokenPlaces))
	case spec.Transport == "sse" || spec.Transport == "long_polling":
		p.errf(n, "access_token_in applies to the websockets transport, not %s (the event stream carries the token in its query, polls and sends in their header)", spec.Transport)
	default:
		spec.WebSocketTokenInQuery = v == "query"
	}
}

// suggestion adds the nearest valid choice to msg, when one is near.
func suggestion(msg, v string, choices []string) string {
	if s := Suggest(strings.ToLower(v), choices); s != "" {
		msg += " (did you mean " + q(s) + "?)"
	}
	return msg
}

func (p *parser) hubTimeouts(spec *SignalRSpec, f map[string]kv) {
	if e, ok := f["keep_alive"]; ok {
		spec.KeepAlive = p.onOff(e.v, "keep_alive")
	}
	if e, ok := f["server_timeout"]; ok {
		spec.ServerTimeout = p.onOff(e.v, "server_timeout")
	}
	if e, ok := f["handshake_timeout"]; ok {
		spec.HandshakeTimeout, _ = p.duration(e.v, "handshake_timeout", false)
	}
	if e, ok := f["negotiate_timeout"]; ok {
		spec.NegotiateTimeout, _ = p.duration(e.v, "negotiate_timeout", false)
	}
}

// hubListen reads the push targets counted per target: one name or a
// list, each once.
func (p *parser) hubListen(n *yaml.Node) []string {
	items := []*yaml.Node{n}
	if v := deref(n); v.Kind == yaml.SequenceNode {
		items, _ = p.list(v, "listen")
	}
	var listen []string
	seen := map[string]bool{}
	for _, it := range items {
		t, ok := p.text(it, "listen target")
		if !ok {
			continue
		}
		switch {
		case strings.TrimSpace(t) == "":
			p.errf(it, "bad listen target: expected the name the hub pushes to, such as OrderPlaced")
		case seen[t]:
			p.errf(it, "listen target %s is listed twice", q(t))
		default:
			seen[t] = true
			listen = append(listen, t)
		}
	}
	return listen
}

// hubTimestamp reads where a push carries its send time; it times pushes
// to the listen targets, so it needs some.
func (p *parser) hubTimestamp(spec *SignalRSpec, e kv, hasListen bool) {
	s, ok := p.text(e.v, "timestamp")
	if !ok {
		return
	}
	path, ok := jsonPath(s)
	if !ok {
		p.errf(e.v, "bad timestamp path %s: expected a path into the push's arguments such as 0.sentAt", q(s))
		return
	}
	spec.Timestamp = path
	if len(spec.Listen) == 0 && !hasListen {
		p.errf(e.k, "timestamp times pushes to the listen targets, but the section has no listen: add listen: [TARGET]")
	}
}

var hubCallKeys = []string{"method", "invoke", "send", "stream", "args", "timeout"}

// hubCall reads {method: M, args: [...], timeout: 5s}; send: M and stream:
// M take the place of method for the other modes.
func (p *parser) hubCall(n *yaml.Node, sc *scope) (HubCall, bool) {
	n = deref(n)
	call := HubCall{Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad hub call: expected a mapping such as {method: JoinRestaurant, args: [\"{{ tenant }}\"]}, found %s", kindName(n))
		return call, false
	}
	f := p.fields(n, "hub call", hubCallKeys)
	mode := p.oneOf(f, []string{"method", "invoke", "send", "stream"}, "hub call", "one of method (or invoke), send, stream")
	if mode == nil {
		if p.missing(n, "method") {
			p.errf(n, "hub call has no method: expected method: NAME (await the result), send: NAME (fire and forget) or stream: NAME")
		}
		return call, false
	}
	switch mode.key {
	case "send":
		call.Mode = HubSend
	case "stream":
		call.Mode = HubStream
	}
	name, ok := p.text(mode.v, mode.key)
	if !ok {
		return call, false
	}
	if strings.TrimSpace(name) == "" {
		p.errf(mode.v, "bad hub method name: expected the name of a hub method such as JoinRestaurant")
		return call, false
	}
	call.Method = name
	if e, ok := f["args"]; ok {
		if v := deref(e.v); v.Kind != yaml.SequenceNode {
			p.errf(v, "bad args: expected a list such as [\"{{ tenant }}\", 20], found %s", kindName(v))
			return call, false
		}
		call.Args = p.jsonBody(e.v, sc)
		if call.Args == nil {
			return call, false
		}
	} else {
		call.Args = &Template{Source: "[]", Parts: []Part{{Kind: PartLiteral, Literal: "[]"}}}
	}
	if e, ok := f["timeout"]; ok {
		if call.Mode == HubSend {
			p.errf(e.k, "timeout applies to method and stream calls: send does not wait for an answer")
		} else {
			call.Timeout, _ = p.duration(e.v, "timeout", false)
		}
	}
	return call, true
}
