package plan

import "gopkg.in/yaml.v3"

// Plan sections beyond the core (connection options, gates, monitors,
// persistent connections) register here from their own files, so each
// feature's syntax lives beside its types and the core parser stays one
// piece.

type topExtension struct {
	key   string
	parse func(p *parser, n *yaml.Node)
}

type scenarioExtension struct {
	key   string
	parse func(p *parser, s *Scenario, n *yaml.Node)
}

var (
	topExtensions      []topExtension
	scenarioExtensions []scenarioExtension
)

func allTopKeys() []string {
	keys := append([]string{}, topKeys...)
	for _, e := range topExtensions {
		keys = append(keys, e.key)
	}
	return keys
}

func allScenarioKeys() []string {
	keys := []string{"weight", "steps"}
	for _, e := range scenarioExtensions {
		keys = append(keys, e.key)
	}
	return keys
}

// persistent reports whether the scenario holds connections (WebSocket or
// SignalR) rather than sending request steps, so it needs no request step.
func (s *Scenario) persistent() bool { return s.Connection != nil }

// ConnectionSpec describes a persistent-connection scenario. Its fields are
// defined by the connection protocols' plan syntax.
type ConnectionSpec struct {
	Kind string // "websocket" or "signalr"
	Pos  Pos
	// PerTenant holds this many connections per tenant of the pool.
	PerTenant int
	// Compiled is the scenario compiled by its protocol's syntax
	// (connection.go); Spec is the nil-safe way to read it.
	Compiled *Connection
}
