package plan

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Persistent-connection scenarios: a population of WebSocket or SignalR
// connections held while other scenarios drive HTTP load (a restaurant
// system's kitchen displays, printers and waiter apps).
//
//	kitchen-display:
//	  per_tenant: 2                # or users: N
//	  signalr:
//	    url: /hubs/kitchen
//	    invoke: [{method: JoinRestaurant, args: ["{{ tenant }}"]}]
//	    listen: [OrderPlaced]
//	    timestamp: "0.sentAt"
//
// The population follows the load profile's shape: at any moment it holds
// its full count times the stage target over the profile's peak, so a ramp
// of users ramps connections too.

// Connection kinds, the scenario keys that select them.
const (
	KindWebSocket = "websocket"
	KindSignalR   = "signalr"
)

// defaultReconnect is how long a population slot waits before connecting
// again after a failure or a dropped connection.
const defaultReconnect = time.Second

// Connection is the compiled form of a connection scenario, kept in
// ConnectionSpec.Compiled.
type Connection struct {
	// Users is a fixed population size; 0 when the scenario uses per_tenant.
	Users    int
	usersPos Pos
	// Reconnect is the wait before a slot connects again after a failed
	// connect or a lost connection.
	Reconnect time.Duration
	SignalR   *SignalRSpec
	WebSocket *WebSocketSpec
}

// Spec returns the compiled connection scenario.
func (c *ConnectionSpec) Spec() *Connection {
	if c == nil {
		return nil
	}
	return c.Compiled
}

// Count is the number of connections the scenario holds at the profile's
// peak with tenants tenants (the plan's pool, or a gate level's).
func (c *ConnectionSpec) Count(tenants int) int {
	if c.PerTenant > 0 {
		return c.PerTenant * tenants
	}
	if s := c.Spec(); s != nil {
		return s.Users
	}
	return 0
}

// HubCallMode says how a scripted hub call is made.
type HubCallMode uint8

const (
	HubInvoke HubCallMode = iota // await the Completion
	HubSend                      // fire and forget
	HubStream                    // StreamInvocation: items until the Completion
)

// HubCall is one hub method call made after connecting.
type HubCall struct {
	Mode   HubCallMode
	Method string
	// Args renders the JSON array of arguments.
	Args    *Template
	Timeout time.Duration // 0: the hub client's default (30s)
	Pos     Pos
}

// SignalRSpec is a SignalR (JSON hub protocol over WebSockets) scenario.
type SignalRSpec struct {
	// URL is the hub URL: a path joined to the target, or absolute
	// (http, https, ws or wss).
	URL         *Template
	AccessToken string
	Headers     []Header
	// SkipNegotiate connects the WebSocket directly.
	SkipNegotiate bool
	// Protocol is the hub protocol: "json" (default) or "messagepack".
	Protocol string
	// Transport is "websockets" (default), "sse", "long_polling" or
	// "auto" (the first the server offers, in that order, falling back).
	Transport string
	// StatefulReconnect asks for ASP.NET Core 8 stateful reconnect
	// (websockets or auto only; needs negotiate).
	StatefulReconnect bool
	// Zero durations mean the client's defaults; negative means off.
	KeepAlive        time.Duration
	ServerTimeout    time.Duration
	HandshakeTimeout time.Duration
	NegotiateTimeout time.Duration
	Calls            []HubCall
	// Listen names the push targets counted per target.
	Listen []string
	// Timestamp is the path of a send time (ms since the epoch) in a push's
	// arguments array; nil: no push latency.
	Timestamp []string
	// Hold is how long a connection stays open before it is closed and
	// opened again; 0: the whole run.
	Hold time.Duration
	Pos  Pos
}

// WSStepKind is what a WebSocket step does.
type WSStepKind uint8

const (
	WSSend WSStepKind = iota
	WSWait
	WSHold
	WSClose
)

// WSStep is one step of a WebSocket script.
type WSStep struct {
	Kind WSStepKind
	// Name is the metric key of send and wait steps ("send 1", "wait 2" by
	// default: the kind and the step's place in the script).
	Name string
	Pos  Pos

	// Send.
	Body   *Template
	Binary bool

	// Wait: the value at JSON path Path equals Equals, and/or Regex
	// matches the raw message; neither: any message.
	Path      []string
	Equals    string
	HasEquals bool
	Regex     *regexp.Regexp
	Timeout   time.Duration
	Captures  []Capture

	// Hold: 0 holds for the rest of the run.
	Hold time.Duration

	// Close.
	Code   int
	Reason string
}

// WebSocketSpec is a plain WebSocket scenario: connect, then run the steps;
// the script starts again (a new connection) when it ends before the run.
type WebSocketSpec struct {
	URL          *Template
	Subprotocols []string
	Headers      []Header
	// ConnectTimeout bounds TCP connect plus upgrade (0: 10s).
	ConnectTimeout time.Duration
	// KeepAlive sends a ping frame after this long without a send (0: none).
	KeepAlive time.Duration
	// ServerTimeout ends a connection that received nothing for this long
	// (0: never).
	ServerTimeout time.Duration
	Steps         []WSStep
	// Captures is the number of capture slots a connection needs.
	Captures     int
	CaptureNames []string
	Pos          Pos
}

const defaultWaitTimeout = 10 * time.Second

func init() {
	scenarioExtensions = append(scenarioExtensions,
		scenarioExtension{key: KindWebSocket, parse: (*parser).websocketSection},
		scenarioExtension{key: KindSignalR, parse: (*parser).signalrSection},
		// Runs after the protocol keys, so it sees s.Connection.
		scenarioExtension{key: "users", parse: (*parser).connUsers},
	)
}

// connection starts a connection scenario; nil when the scenario already
// has one (reported).
func (p *parser) connection(s *Scenario, n *yaml.Node, kind string) *Connection {
	if s.Connection != nil {
		p.errf(n, "scenario %s has both %s and %s: expected one protocol per scenario", q(s.Name), s.Connection.Kind, kind)
		return nil
	}
	c := &Connection{Reconnect: defaultReconnect}
	s.Connection = &ConnectionSpec{Kind: kind, Pos: p.pos(deref(n)), PerTenant: s.PerTenant, Compiled: c}
	return c
}

func (p *parser) connUsers(s *Scenario, n *yaml.Node) {
	if s.Connection == nil {
		p.errf(n, "users applies to websocket and signalr scenarios: request scenarios share the stages' users by weight")
		return
	}
	if v, ok := p.intMin(n, "users", 1); ok {
		c := s.Connection.Spec()
		c.Users = v
		c.usersPos = p.pos(deref(n))
	}
}

// finishConnection checks what a connection scenario cannot have or must
// have, once all its keys are read. f holds the scenario's keys.
func (p *parser) finishConnection(s *Scenario, f map[string]kv) {
	kind := s.Connection.Kind
	if e, ok := f["steps"]; ok {
		hint := "signalr calls go under signalr: {invoke: [...]}"
		if kind == KindWebSocket {
			hint = "websocket steps go under websocket: {steps: [...]}"
		}
		p.errf(e.k, "scenario %s holds %s connections, so it has no request steps: %s", q(s.Name), kind, hint)
	}
	if e, ok := f["weight"]; ok {
		p.errf(e.k, "weight applies to request scenarios: scenario %s sets its connection count with users: N or per_tenant: K", q(s.Name))
	}
	_, hasUsers := f["users"]
	_, hasPT := f["per_tenant"]
	switch {
	case hasUsers && hasPT:
		p.errf(f["per_tenant"].k, "scenario %s has both users and per_tenant: expected users: N (a fixed number of connections) or per_tenant: K (K per tenant)", q(s.Name))
	case !hasUsers && !hasPT:
		p.errf(f[kind].k, "scenario %s does not say how many connections to hold: add users: N or per_tenant: K beside %s", q(s.Name), kind)
	case hasPT && !p.tenants:
		p.errf(f["per_tenant"].v, "per_tenant needs a tenant pool: add tenants: {count: N} at the top level")
	}
}

// connURL compiles a connection URL: a path (joined to the target) or an
// absolute URL with one of schemes.
func (p *parser) connURL(n *yaml.Node, sc *scope, schemes []string) *Template {
	raw := deref(n)
	u, ok := p.text(raw, "url")
	if !ok {
		return nil
	}
	lu := strings.ToLower(u)
	switch {
	case strings.HasPrefix(u, "/"):
		if p.relative == nil {
			p.relativeURL = u
		}
		p.relative = append(p.relative, p.pos(raw))
	default:
		good := false
		for _, s := range schemes {
			good = good || strings.HasPrefix(lu, s+"://")
		}
		if !good {
			p.errf(raw, "bad url %s: expected a path starting with / (joined to the target) or an absolute %s URL", q(u), strings.Join(schemes, ", "))
			return nil
		}
	}
	return p.tmpl(raw, "url", modeURL, sc)
}

// connHeaders merges the plan's default headers with the section's, the
// section's winning by name.
func (p *parser) connHeaders(n *yaml.Node, sc *scope) []Header {
	out := append([]Header(nil), p.plan.Defaults.Headers...)
	for _, h := range p.headers(n, sc) {
		replaced := false
		for i := range out {
			if strings.EqualFold(out[i].Name, h.Name) {
				out[i], replaced = h, true
				break
			}
		}
		if !replaced {
			out = append(out, h)
		}
	}
	return out
}

// onOff reads a duration where 0s, off or false mean "never" (stored as
// -1); an absent key means the default (0).
func (p *parser) onOff(n *yaml.Node, what string) time.Duration {
	s, ok := p.text(n, what)
	if !ok {
		return 0
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "false", "never":
		return -1
	}
	d, ok := parseDuration(s)
	if !ok || d < 0 {
		p.errf(n, "bad %s %s: expected a duration such as 15s, or off", what, q(s))
		return 0
	}
	if d == 0 {
		return -1
	}
	return d
}

// holdValue reads hold: a duration, or "run" for the rest of the run (0).
func (p *parser) holdValue(n *yaml.Node) (time.Duration, bool) {
	s, ok := p.text(n, "hold")
	if !ok {
		return 0, false
	}
	if strings.TrimSpace(s) == "run" {
		return 0, true
	}
	d, ok := parseDuration(s)
	if !ok || d <= 0 {
		p.errf(n, "bad hold %s: expected a duration above zero such as 5m, or run (hold for the rest of the run)", q(s))
		return 0, false
	}
	return d, true
}

// noData rejects data references in connection templates: rows are handed
// out per iteration, and a connection has no iterations.
func (p *parser) noData(sc *scope, pos Pos) {
	if len(sc.dataUsed) > 0 {
		p.errAt(pos, "connection scenarios cannot use data sources ({{ data.* }}): use {{ tenant }}, {{ vu }}, vars or captures")
	}
}

var signalrKeys = []string{"url", "access_token", "headers", "skip_negotiate", "keep_alive", "server_timeout",
	"handshake_timeout", "negotiate_timeout", "invoke", "listen", "timestamp", "hold", "reconnect", "protocol", "transport", "stateful_reconnect"}

// signalrProtocols are the hub protocols a signalr section may name.
var signalrProtocols = []string{"json", "messagepack"}

// signalrTransports are the transports a signalr section may name.
var signalrTransports = []string{"websockets", "sse", "long_polling", "auto"}

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
	} else if deref(n).Kind == yaml.MappingNode && p.missing(n, "url") {
		p.errf(deref(n), "signalr section has no url: expected url: /hubs/NAME or an absolute hub URL")
	} else if isNull(deref(n)) {
		p.errf(deref(n), "signalr section is empty: expected {url: /hubs/NAME, invoke: [...], listen: [...]}")
	}
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
	if e, ok := f["protocol"]; ok {
		if v, ok := p.text(e.v, "protocol"); ok {
			if slices.Contains(signalrProtocols, v) {
				spec.Protocol = v
			} else {
				msg := "bad hub protocol " + q(v) + ": expected json or messagepack"
				if s := Suggest(strings.ToLower(v), signalrProtocols); s != "" {
					msg += " (did you mean " + q(s) + "?)"
				}
				p.errf(e.v, "%s", msg)
			}
		}
	}
	if e, ok := f["transport"]; ok {
		if v, ok := p.text(e.v, "transport"); ok {
			switch {
			case !slices.Contains(signalrTransports, v):
				msg := "bad transport " + q(v) + ": expected websockets, sse, long_polling or auto"
				if s := Suggest(strings.ToLower(v), signalrTransports); s != "" {
					msg += " (did you mean " + q(s) + "?)"
				}
				p.errf(e.v, "%s", msg)
			case v == "sse" && spec.Protocol == "messagepack":
				p.errf(e.v, "transport sse carries text only and cannot carry the messagepack protocol: use long_polling, websockets or auto")
			case v != "websockets" && v != "auto" && spec.SkipNegotiate:
				p.errf(e.v, "transport %s needs negotiate, but skip_negotiate is set: only websockets can skip it", v)
			default:
				spec.Transport = v
			}
		}
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
	if e, ok := f["invoke"]; ok {
		items, _ := p.list(e.v, "invoke")
		for _, it := range items {
			if call, ok := p.hubCall(it, sc); ok {
				spec.Calls = append(spec.Calls, call)
			}
		}
	}
	if e, ok := f["listen"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items, _ = p.list(v, "listen")
		}
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
				spec.Listen = append(spec.Listen, t)
			}
		}
	}
	if e, ok := f["timestamp"]; ok {
		if s, ok := p.text(e.v, "timestamp"); ok {
			path, ok := jsonPath(s)
			if !ok {
				p.errf(e.v, "bad timestamp path %s: expected a path into the push's arguments such as 0.sentAt", q(s))
			} else {
				spec.Timestamp = path
				if len(spec.Listen) == 0 && f["listen"].v == nil {
					p.errf(e.k, "timestamp times pushes to the listen targets, but the section has no listen: add listen: [TARGET]")
				}
			}
		}
	}
	if e, ok := f["hold"]; ok {
		spec.Hold, _ = p.holdValue(e.v)
	}
	if e, ok := f["reconnect"]; ok {
		if d, ok := p.duration(e.v, "reconnect", true); ok {
			c.Reconnect = d
		}
	}
	p.noData(sc, spec.Pos)
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

var websocketKeys = []string{"url", "subprotocols", "headers", "connect_timeout", "keep_alive", "server_timeout", "steps", "reconnect"}

func (p *parser) websocketSection(s *Scenario, n *yaml.Node) {
	c := p.connection(s, n, KindWebSocket)
	if c == nil {
		return
	}
	spec := &WebSocketSpec{Pos: p.pos(deref(n))}
	c.WebSocket = spec
	sc := p.scope(map[string]int{})
	f := p.fields(n, "websocket section", websocketKeys)
	if e, ok := f["url"]; ok {
		spec.URL = p.connURL(e.v, sc, []string{"ws", "wss", "http", "https"})
	} else if (deref(n).Kind == yaml.MappingNode || isNull(deref(n))) && p.missing(n, "url") {
		p.errf(deref(n), "websocket section has no url: expected url: ws://host/path or a path joined to the target")
	}
	if e, ok := f["subprotocols"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items, _ = p.list(v, "subprotocols")
		}
		for _, it := range items {
			if s, ok := p.text(it, "subprotocol"); ok {
				if !isToken(s) {
					p.errf(it, "bad subprotocol %s: expected a token such as chat.v1", q(s))
					continue
				}
				spec.Subprotocols = append(spec.Subprotocols, s)
			}
		}
	}
	if e, ok := f["headers"]; ok {
		spec.Headers = p.connHeaders(e.v, sc)
	} else {
		spec.Headers = append([]Header(nil), p.plan.Defaults.Headers...)
	}
	if e, ok := f["connect_timeout"]; ok {
		spec.ConnectTimeout, _ = p.duration(e.v, "connect_timeout", false)
	}
	if e, ok := f["keep_alive"]; ok {
		spec.KeepAlive = max(p.onOff(e.v, "keep_alive"), 0)
	}
	if e, ok := f["server_timeout"]; ok {
		spec.ServerTimeout = max(p.onOff(e.v, "server_timeout"), 0)
	}
	if e, ok := f["reconnect"]; ok {
		if d, ok := p.duration(e.v, "reconnect", true); ok {
			c.Reconnect = d
		}
	}
	if e, ok := f["steps"]; ok {
		items, _ := p.list(e.v, "websocket steps")
		for i, it := range items {
			if st, ok := p.wsStep(it, i+1, sc); ok {
				spec.Steps = append(spec.Steps, st)
			}
		}
	}
	spec.Captures = len(sc.capOrder)
	spec.CaptureNames = sc.capOrder
	p.noData(sc, spec.Pos)
}

var wsStepKinds = []string{"send", "wait", "hold", "close"}

func (p *parser) wsStep(n *yaml.Node, num int, sc *scope) (WSStep, bool) {
	n = deref(n)
	st := WSStep{Pos: p.pos(n)}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad websocket step: expected a mapping with one of send, wait, hold, close, found %s", kindName(n))
		return st, false
	}
	f := p.fields(n, "websocket step", append([]string{"name"}, wsStepKinds...))
	kind := p.oneOf(f, wsStepKinds, "websocket step", "exactly one of send, wait, hold, close")
	if kind == nil {
		if p.missing(n, "send") && p.missing(n, "wait") && p.missing(n, "hold") && p.missing(n, "close") {
			p.errf(n, "websocket step does nothing: expected one of send, wait, hold, close")
		}
		return st, false
	}
	st.Name = kind.key + " " + strconv.Itoa(num)
	if e, ok := f["name"]; ok {
		if kind.key == "hold" || kind.key == "close" {
			p.errf(e.k, "name applies to send and wait steps, which are timed")
		} else if s, ok := p.text(e.v, "name"); ok && s != "" {
			st.Name = s
		}
	}
	good := true
	switch kind.key {
	case "send":
		st.Kind = WSSend
		good = p.wsSend(&st, kind.v, sc)
	case "wait":
		st.Kind = WSWait
		good = p.wsWait(&st, kind.v, sc)
	case "hold":
		st.Kind = WSHold
		st.Hold, good = p.holdValue(kind.v)
	case "close":
		st.Kind = WSClose
		st.Code = 1000
		good = p.wsClose(&st, kind.v)
	}
	return st, good
}

// wsSend reads send: TEXT, or {text: T}, {json: VALUE} or {binary: T}.
func (p *parser) wsSend(st *WSStep, n *yaml.Node, sc *scope) bool {
	v := deref(n)
	if v.Kind == yaml.ScalarNode && !isNull(v) {
		st.Body = p.tmpl(v, "send", modeRaw, sc)
		return st.Body != nil
	}
	f := p.fields(n, "send", []string{"text", "json", "binary"})
	body := p.oneOf(f, []string{"text", "json", "binary"}, "send", "one of text, json, binary")
	if body == nil {
		if p.missing(n, "text") && p.missing(n, "json") {
			p.errf(v, "send has no message: expected send: TEXT, {text: T}, {json: VALUE} or {binary: T}")
		}
		return false
	}
	switch body.key {
	case "json":
		st.Body = p.jsonBody(body.v, sc)
	default:
		st.Body = p.tmpl(body.v, "send "+body.key, modeRaw, sc)
		st.Binary = body.key == "binary"
	}
	return st.Body != nil
}

func (p *parser) wsWait(st *WSStep, n *yaml.Node, sc *scope) bool {
	st.Timeout = defaultWaitTimeout
	f := p.fields(n, "wait", []string{"json", "equals", "regex", "timeout", "capture"})
	good := true
	if e, ok := f["json"]; ok {
		if s, ok := p.text(e.v, "json path"); ok {
			if path, ok := jsonPath(s); ok {
				st.Path = path
			} else {
				p.errf(e.v, "bad json path %s: expected dotted names and indexes such as order.items.0.id", q(s))
				good = false
			}
		}
	}
	if e, ok := f["equals"]; ok {
		if st.Path == nil && f["json"].v == nil {
			p.errf(e.k, "equals compares the value at a json path: add json: PATH")
			good = false
		}
		v := deref(e.v)
		if v.Kind != yaml.ScalarNode {
			p.errf(v, "bad equals: expected a single value, found %s", kindName(v))
			good = false
		} else {
			want, ok := "", true
			switch v.ShortTag() {
			case "!!null", "!!bool", "!!int", "!!float":
				if want, ok = p.jsonScalar(v); !ok {
					want, ok = v.Value, true
				}
			default:
				want, ok = p.text(v, "equals")
			}
			st.Equals, st.HasEquals = want, ok
		}
	}
	if e, ok := f["json"]; ok && f["equals"].v == nil {
		p.errf(e.k, "wait json needs equals: expected {json: PATH, equals: VALUE} (match any message with regex instead)")
		good = false
	}
	if e, ok := f["regex"]; ok {
		if s, ok := p.text(e.v, "regex"); ok {
			re, msg := compileRegex(s)
			if msg != "" {
				p.errf(e.v, "bad regex %s: %s", q(s), msg)
				good = false
			}
			st.Regex = re
		}
	}
	if e, ok := f["timeout"]; ok {
		d, ok := p.duration(e.v, "timeout", false)
		st.Timeout = d
		good = good && ok
	}
	// Captures come last: they name what later steps may use.
	if e, ok := f["capture"]; ok {
		st.Captures = p.captures(e.v, sc)
		for _, c := range st.Captures {
			if c.Kind == CaptureHeader {
				p.errAt(c.Pos, "capture %s: header captures apply to HTTP steps; capture from a message with json or regex", q(c.Name))
				good = false
			}
		}
	}
	return good
}

func (p *parser) wsClose(st *WSStep, n *yaml.Node) bool {
	f := p.fields(n, "close", []string{"code", "reason"})
	good := true
	if e, ok := f["code"]; ok {
		v, ok := p.intMin(e.v, "close code", 1000)
		// 1000 and 3000-4999 are what an application may send (RFC 6455
		// 7.4; 1001-1015 are for endpoints' own conditions).
		if ok && !(v == 1000 || v >= 3000 && v <= 4999) {
			p.errf(e.v, "bad close code %d: expected 1000 (normal) or an application code 3000-4999", v)
			ok = false
		}
		st.Code = v
		good = ok
	}
	if e, ok := f["reason"]; ok {
		if s, ok := p.text(e.v, "reason"); ok {
			if len(s) > 123 {
				p.errf(e.v, "close reason too long: at most 123 bytes fit in a close frame")
				good = false
			}
			st.Reason = s
		}
	}
	return good
}
