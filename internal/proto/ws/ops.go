package ws

import "github.com/stampede-load/stampede/internal/proto/opname"

// Op names one timed operation of a scripted WebSocket connection: the
// step its latencies and failures are kept under in a result. Only this
// package makes them, so a name a run lists up front and one it records
// cannot drift apart, and a misspelt one does not compile.
type Op struct{ name string }

// String is the op's metric key, as results show it.
func (o Op) String() string { return o.name }

// The fixed operations of a connection's life.
var (
	OpUpgrade = Op{opname.Upgrade}
	// OpSession is a held connection, timed over its life: ok when we
	// closed it, else the disconnect's class.
	OpSession = Op{opname.Session}
)

// StepOp is a send or wait step of the script, under the name the plan
// gives it.
func StepOp(name string) Op { return Op{name} }
