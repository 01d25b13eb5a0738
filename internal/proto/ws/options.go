package ws

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// MessageType is a WebSocket data message type.
type MessageType int

const (
	Text   MessageType = websocket.TextMessage
	Binary MessageType = websocket.BinaryMessage
)

// Options configure every connection of a population. They are shared and
// must not change once the first connection is dialed.
type Options struct {
	Subprotocols []string
	TLS          *tls.Config
	// ConnectTimeout bounds TCP connect plus upgrade (default 10s).
	ConnectTimeout time.Duration
	// WriteTimeout bounds one send (default 10s).
	WriteTimeout time.Duration
	// ReadLimit is the largest message accepted; a larger one ends the
	// connection as a protocol error (default 1 MiB).
	ReadLimit int64
	// ReadBufferSize is gorilla's buffer for the 101 answer and the buffer
	// an idle connection read by a goroutine waits with (default 128);
	// frames and messages of any size go to a buffer lent while they are
	// partly in.
	ReadBufferSize int
	// KeepAlive sends something when nothing was sent for this long
	// (0: never). KeepAliveMessage is what (nil: a WebSocket ping frame),
	// sent as a KeepAliveType message (0: Text).
	KeepAlive        time.Duration
	KeepAliveMessage []byte
	KeepAliveType    MessageType
	// IdleTimeout ends the connection as PingTimeout when nothing at all
	// arrived for this long (0: never).
	IdleTimeout time.Duration
	// CloseTimeout bounds the wait for the peer's close frame (default 1s).
	CloseTimeout time.Duration
	// Backlog keeps up to this many messages that no waiter matched, so a
	// WaitFor called just after the answer arrived still sees it. 0 keeps
	// none: connections that only listen hold no message memory.
	Backlog int
	// Counters, when set, counts messages and bytes of every connection.
	Counters *Counters
	// NetDial replaces the TCP dialer (tests, source-address pools).
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)

	// goroutineReads keeps a reading goroutine per connection where
	// readiness would serve (tests compare the two).
	goroutineReads bool

	tlsOnce sync.Once
	tlsConf *tls.Config
}

// tlsConfig is TLS as the upgrade needs it: a clone of our own that offers
// only http/1.1. A config that net/http has used carries "h2" in its
// NextProtos; a server that picks h2 then reads our HTTP/1.1 upgrade
// request as a broken HTTP/2 preface and the connection dies (WebSockets
// over HTTP/2, RFC 8441, is another protocol that gorilla does not speak).
// Cloned once, as o must not change after the first dial.
func (o *Options) tlsConfig() *tls.Config {
	o.tlsOnce.Do(func() {
		if o.TLS != nil {
			c := o.TLS.Clone()
			c.NextProtos = []string{"http/1.1"}
			o.tlsConf = c
		}
	})
	return o.tlsConf
}

func (o *Options) connectTimeout() time.Duration { return orDefault(o.ConnectTimeout, 10*time.Second) }
func (o *Options) writeTimeout() time.Duration   { return orDefault(o.WriteTimeout, 10*time.Second) }
func (o *Options) closeTimeout() time.Duration   { return orDefault(o.CloseTimeout, time.Second) }

func (o *Options) readLimit() int64 {
	if o.ReadLimit > 0 {
		return o.ReadLimit
	}
	return 1 << 20
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Counters are shared by a population; atomics, because the read loops of
// thousands of connections add to them.
type Counters struct {
	MsgsIn, MsgsOut, BytesIn, BytesOut atomic.Int64
}

// Handler receives every data message on the goroutine reading the
// connection: one message at a time, in order, though not always on the
// same goroutine (evread.go). data is valid only during the call.
// Returning an error ends the connection; a *Disconnect keeps its reason
// and class, anything else is a protocol error.
type Handler interface {
	Message(c *Conn, typ MessageType, data []byte) error
	// Closed is called once when the connection ends; it may return a
	// better-informed Disconnect (nil keeps d).
	Closed(c *Conn, d *Disconnect) *Disconnect
}

// Timing is how long connecting took.
type Timing struct {
	TCP     time.Duration // TCP connect (the TLS handshake is in Upgrade only)
	Upgrade time.Duration // from dial start to the 101 answer, TCP included
}
