package signalr

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/proto/ws"
)

// Options configure every connection of a population; shared, read-only
// once the first connection starts.
type Options struct {
	// AccessToken is the bearer token until a negotiate redirect gives
	// one (token.go says where each request carries it).
	AccessToken string
	// WebSocketTokenInQuery puts the WebSocket's access token in its
	// URL's access_token query, as browsers must, instead of in the
	// upgrade's Authorization header, as the .NET client and the
	// JavaScript client in Node do.
	WebSocketTokenInQuery bool
	// HTTPClient is used for negotiate (default: when TLS is set, a pool
	// of these Options' own over a clone of TLS; else a shared pool).
	HTTPClient *http.Client
	// TLS configures negotiate (when HTTPClient is nil) and wss://
	// upgrades: custom CA, client certificate, server name. Each gets a
	// clone, so net/http adding "h2" to its copy never reaches the
	// upgrade, which offers only http/1.1.
	TLS *tls.Config
	// SkipNegotiate connects the WebSocket directly, as clients configured
	// with skipNegotiation do.
	SkipNegotiate bool
	// Protocol is the hub protocol (default JSON).
	Protocol Protocol
	// Transport is the transport (default WebSockets); Server-Sent
	// Events and long polling need negotiate.
	Transport Transport

	NegotiateTimeout time.Duration // default 15s, all redirects together
	UpgradeTimeout   time.Duration // default 15s
	HandshakeTimeout time.Duration // default 15s
	// KeepAlive sends a Ping when nothing else was sent for this long
	// (default 15s, as the .NET and JavaScript clients; negative: never).
	KeepAlive time.Duration
	// ServerTimeout ends the connection when the server sent nothing for
	// this long (default 30s; negative: never).
	ServerTimeout time.Duration
	// InvokeTimeout bounds an Invoke or Stream whose context has no
	// deadline (default 30s).
	InvokeTimeout time.Duration
	// MaxMessage is the largest WebSocket message and the largest record
	// accepted (default 1 MiB).
	MaxMessage int64
	// TimestampPath locates a send time (ms since the epoch, number or
	// numeric string) in a push's arguments array, e.g. ["0","sentAt"];
	// when found, push latency is recorded.
	TimestampPath []string
	// StatefulReconnect asks negotiate for stateful reconnect (ASP.NET
	// Core 8+, WebSockets only): when granted, sent messages are kept
	// until acknowledged, and a cut socket is dialled again with the same
	// connection token and the unacknowledged messages sent again.
	StatefulReconnect bool
	// AckInterval is how long after a message arrives its Ack goes (one
	// for a burst; default 1s, as the .NET and JavaScript clients;
	// negative: never).
	AckInterval time.Duration
	// ReconnectWindow bounds a stateful reconnect's attempts (default
	// 10s).
	ReconnectWindow time.Duration
	// Stats counts the population; nil counts nothing.
	Stats *Stats
	// Recorder receives latencies and failures; nil records nothing.
	Recorder Recorder
	// OnPush, when set, sees every server invocation (on the read
	// goroutine; args valid only during the call).
	OnPush func(c *Conn, target string, args json.RawMessage)

	once sync.Once
	wso  ws.Options
	hc   *http.Client
	sc   *http.Client // SSE and long polling; see streamClient
}

func (o *Options) wsOptions() *ws.Options {
	o.once.Do(func() {
		o.wso = ws.Options{
			ConnectTimeout:   dflt(o.UpgradeTimeout, 15*time.Second),
			ReadLimit:        o.maxMessage(),
			KeepAlive:        dflt(o.KeepAlive, 15*time.Second),
			KeepAliveMessage: o.Protocol.ping(),
			KeepAliveType:    o.Protocol.wsType(),
			IdleTimeout:      dflt(o.ServerTimeout, 30*time.Second),
			TLS:              o.TLS,
		}
		if o.Stats != nil {
			o.wso.Counters = &o.Stats.Counters
		}
		o.hc = o.HTTPClient
		if o.hc == nil && o.TLS != nil {
			o.hc = newNegotiateClient(o.TLS.Clone())
		}
		if o.hc == nil {
			o.hc = sharedHTTP
		}
		o.sc = o.HTTPClient
		if o.sc == nil && (o.Transport != WebSockets) {
			o.sc = newStreamClient(o.TLS)
		}
	})
	return &o.wso
}

func (o *Options) httpClient() *http.Client {
	o.wsOptions()
	return o.hc
}

// streamClient carries SSE and long-polling requests and sends.
func (o *Options) streamClient() *http.Client {
	o.wsOptions()
	return o.sc
}

// CloseIdleConnections drops the negotiate client's idle connections
// (when the population has one of its own), at the end of a run.
func (o *Options) CloseIdleConnections() {
	if hc := o.httpClient(); hc != sharedHTTP {
		hc.CloseIdleConnections()
	}
	if sc := o.streamClient(); sc != nil {
		sc.CloseIdleConnections()
	}
}

func (o *Options) maxMessage() int64 {
	if o.MaxMessage > 0 {
		return o.MaxMessage
	}
	return 1 << 20
}

// dflt: zero means the default, negative means off.
func dflt(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}
