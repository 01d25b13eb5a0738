package plan

import (
	"regexp"
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

// defaultReconnect bounds a population slot's first wait before it
// connects again after a failure or a dropped connection.
const defaultReconnect = time.Second

// Connection is the compiled form of a connection scenario, kept in
// ConnectionSpec.Compiled.
type Connection struct {
	// Users is a fixed population size; 0 when the scenario uses per_tenant.
	Users    int
	usersPos Pos
	// Retry is how a slot connects again after a failed connect or a
	// lost connection.
	Retry     Retry
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
	URL *Template
	// URLs, instead of URL, spreads the connections over several hubs
	// as Spread says (SpreadRoundRobin or SpreadTenant).
	URLs        []*Template
	Spread      string
	AccessToken string
	// WebSocketTokenInQuery puts the WebSocket's access token in its
	// URL's query (access_token_in: query) instead of its header.
	WebSocketTokenInQuery bool
	Headers               []Header
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
	c := &Connection{Retry: defaultRetry()}
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

// noteRelative records a URL written as a path, which needs the plan's
// target in front of it (the first one's text is kept for the message).
func (p *parser) noteRelative(u string, raw *yaml.Node) {
	if p.relative == nil {
		p.relativeURL = u
	}
	p.relative = append(p.relative, p.pos(raw))
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
		p.noteRelative(u, raw)
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
