package signalr

import "github.com/stampede-load/stampede/internal/proto/opname"

// Op names one timed operation of a SignalR connection: what a Recorder
// hears, and the step its latencies and failures are kept under in a
// result. Only this package makes them, so a name a run lists up front and
// one the client records cannot drift apart, and a misspelt one does not
// compile.
type Op struct{ name string }

// String is the op's metric key, as results show it.
func (o Op) String() string { return o.name }

// The fixed operations of a connection's life.
var (
	OpNegotiate = Op{opname.Negotiate}
	// OpNegotiateRedirect is a negotiate where an earlier one redirected
	// (the hop to Azure SignalR Service).
	OpNegotiateRedirect = Op{opname.NegotiateRedirect}
	// OpNegotiateRestart is the first negotiate of a connection restarted
	// because the server refused the access token of the one before.
	OpNegotiateRestart = Op{opname.NegotiateRestart}
	OpUpgrade          = Op{opname.Upgrade}
	OpHandshake        = Op{opname.Handshake}
	// OpSSEOpen is the Server-Sent Events request, up to its 200 answer.
	OpSSEOpen = Op{opname.SSEOpen}
	// OpPoll is one long poll, timed until the server answers it (with
	// messages, or empty when it held it as long as it holds polls).
	OpPoll = Op{opname.Poll}
	// OpSession is a held connection, timed over its life: ok when we
	// closed it, else the disconnect's class.
	OpSession = Op{opname.Session}
)

// InvokeOp is a hub method invoked with a Completion awaited.
func InvokeOp(method string) Op { return Op{opname.Invoke(method)} }

// SendOp is a hub method invoked without a Completion: only the write is
// timed.
func SendOp(method string) Op { return Op{opname.Send(method)} }

// StreamOp is a streaming invocation, timed until its Completion.
func StreamOp(method string) Op { return Op{opname.Stream(method)} }

// PushOp is a server push to target, timed from the send timestamp the
// message carries.
func PushOp(target string) Op { return Op{opname.Push(target)} }

// phaseOp is the op a connection failed in, from Error.Phase.
func phaseOp(phase string) Op { return Op{phase} }
