// Package opname names the timed operations of persistent connections
// (SignalR and WebSocket): the steps their latencies and failures are kept
// under in a result. The protocol packages make their ops from these
// names, and the plan checks the steps its thresholds name against them,
// so a threshold the plan accepts names what a run records. It is a leaf:
// the plan cannot import the protocol packages.
package opname

// The fixed operations of a connection's life.
const (
	Negotiate = "negotiate"
	// NegotiateRedirect is a negotiate sent where an earlier one
	// redirected: Azure SignalR Service's hop, after the app server's.
	NegotiateRedirect = "negotiate redirect"
	// NegotiateRestart is the first negotiate of a connection restarted
	// because the server refused the access token of the one before (the
	// official clients restart rather than renew a token).
	NegotiateRestart = "negotiate restart"
	Upgrade          = "upgrade"
	Handshake        = "handshake"
	// SSEOpen is a SignalR Server-Sent Events request, up to its 200.
	SSEOpen = "sse open"
	// Poll is one SignalR long poll.
	Poll = "poll"
	// Session is a held connection, timed over its life.
	Session = "session"
)

// Invoke is a hub method invoked with a Completion awaited.
func Invoke(method string) string { return "invoke " + method }

// Send is a hub method invoked without a Completion.
func Send(method string) string { return "send " + method }

// Stream is a streaming hub invocation.
func Stream(method string) string { return "stream " + method }

// Push is a server push to a target.
func Push(target string) string { return "push " + target }
