package signalr

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// Recorder receives one outcome per timed operation (see Op for the
// names). err is nil when class is sample.OK. Implementations must be safe
// for concurrent use.
type Recorder interface {
	Record(op Op, class sample.Class, d time.Duration, err error)
}

func (o *Options) record(op Op, class sample.Class, d time.Duration, err error) {
	if o.Recorder != nil {
		o.Recorder.Record(op, class, d, err)
	}
}

// Stats are the gauges and counters of one population of connections,
// shared by all of them (atomics, no locks).
type Stats struct {
	ws.Counters              // messages and bytes in and out
	Connecting  atomic.Int64 // negotiating, upgrading or handshaking now
	Open        atomic.Int64 // handshaken and not yet ended
	Opened      atomic.Int64 // ever handshaken
	// PeakOpen is the most connections Open held at once, raised at every
	// open, so a connection that lives less than a sampling period counts.
	PeakOpen atomic.Int64
	// Disconnects counts connections that ended while wanted open, by
	// reason; ClosedAtEnd those still open when CloseAtEnd closed them.
	// Opened = Open + ClosedAtEnd + the sum of Disconnects.
	Disconnects [ws.NumReasons]atomic.Int64
	ClosedAtEnd atomic.Int64
	OtherPushes atomic.Int64 // pushes to targets nobody listens for
	// Transports counts opened connections by the transport they run
	// on; Fallbacks the transports that failed to start before another
	// was tried (transport auto).
	Transports [numTransports]atomic.Int64
	Fallbacks  atomic.Int64
	// Stateful reconnect: sockets dialled again and resumed, and those
	// that could not be; our unacknowledged messages sent again after a
	// reconnect (Recovered); server messages received twice and skipped
	// (Duplicates); messages known lost: ours still unacknowledged when a
	// reconnect failed, and the gap when the server resumed past what we
	// had received.
	Reconnects        atomic.Int64
	ReconnectFailures atomic.Int64
	Recovered         atomic.Int64
	Duplicates        atomic.Int64
	Lost              atomic.Int64
	// TokenRefusals counts connections ended because the server refused
	// their access token (a 401); each is restarted from negotiate.
	TokenRefusals atomic.Int64
	restarts      restartsDue
	// ServerCloses counts connections ended by a SignalR Close message,
	// by kind (see CloseKind).
	ServerCloses [numCloseKinds]atomic.Int64

	pushes      map[string]*PushStat // fixed at NewStats: read without locks
	streamItems sync.Map             // method → *atomic.Int64
}

// CloseKind is what a server's Close message said. A graceful Close and
// one with an error point at different faults (a deploy or an eviction,
// a crashed hub), and allowReconnect says the server invites the client
// back; the kinds count apart so a report can tell them apart.
type CloseKind uint8

const (
	CloseGraceful       CloseKind = iota // no error
	CloseError                           // an error text
	CloseAllowReconnect                  // of either, those allowing reconnects
	numCloseKinds
)

var closeKindNames = [numCloseKinds]string{"graceful", "error", "allow_reconnect"}

// CloseCounts is ServerCloses by kind name, the kinds with a count only.
func (s *Stats) CloseCounts() map[string]int64 {
	var m map[string]int64
	for k := range s.ServerCloses {
		if n := s.ServerCloses[k].Load(); n > 0 {
			if m == nil {
				m = map[string]int64{}
			}
			m[closeKindNames[k]] = n
		}
	}
	return m
}

// countStreamItem counts one item of a stream the scenario invoked.
func (s *Stats) countStreamItem(method string) {
	v, ok := s.streamItems.Load(method)
	if !ok {
		v, _ = s.streamItems.LoadOrStore(method, new(atomic.Int64))
	}
	v.(*atomic.Int64).Add(1)
}

// StreamItems is how many stream items arrived, by streamed method.
func (s *Stats) StreamItems() map[string]int64 {
	var m map[string]int64
	s.streamItems.Range(func(k, v any) bool {
		if m == nil {
			m = map[string]int64{}
		}
		m[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return m
}

// PushStat counts server pushes to one target.
type PushStat struct {
	Target string
	Count  atomic.Int64
	op     Op // built once
}

// NewStats makes the counters for a population listening to targets.
func NewStats(targets ...string) *Stats {
	s := &Stats{pushes: make(map[string]*PushStat, len(targets))}
	for _, t := range targets {
		s.pushes[t] = &PushStat{Target: t, op: PushOp(t)}
	}
	return s
}

// Pushes returns how many pushes to target arrived.
func (s *Stats) Pushes(target string) int64 {
	if p := s.pushes[target]; p != nil {
		return p.Count.Load()
	}
	return 0
}

// ByTransport is how many connections opened on each transport, by name.
func (s *Stats) ByTransport() map[string]int64 {
	m := map[string]int64{}
	for t := range s.Transports {
		if n := s.Transports[t].Load(); n > 0 {
			m[Transport(t).String()] = n
		}
	}
	return m
}

// Targets lists the push counters, for reports.
func (s *Stats) Targets() []*PushStat {
	out := make([]*PushStat, 0, len(s.pushes))
	for _, p := range s.pushes {
		out = append(out, p)
	}
	return out
}

// CallMode says how a scripted call is made.
type CallMode uint8

const (
	ModeInvoke CallMode = iota // await the Completion
	ModeSend                   // fire and forget
	ModeStream                 // StreamInvocation: items until the Completion
)

// Call is one scripted hub call, its arguments already rendered for this
// connection (the tenant substituted, say).
type Call struct {
	Method  string
	Args    []any
	Mode    CallMode
	Timeout time.Duration // 0: Options.InvokeTimeout
}
