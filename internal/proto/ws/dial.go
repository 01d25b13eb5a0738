package ws

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/stampede-load/stampede/internal/readiness"
	"github.com/stampede-load/stampede/internal/sample"
)

// Dial connects to url (ws://, wss://, http:// or https://) and starts
// reading. hdr is sent with the upgrade request and may be nil. h may be
// nil when the caller only sends and waits.
func Dial(ctx context.Context, url string, hdr http.Header, o *Options, h Handler) (*Conn, error) {
	url = wsScheme(url)
	ctx, cancel := context.WithTimeout(ctx, o.connectTimeout())
	defer cancel()
	dl := &dialing{o: o, start: time.Now()}
	rb := o.ReadBufferSize
	if rb <= 0 {
		rb = 128
	}
	d := &websocket.Dialer{
		ReadBufferSize:    rb,
		WriteBufferPool:   writePool,
		Subprotocols:      o.Subprotocols,
		NetDialContext:    dl.plain,
		NetDialTLSContext: dl.secure,
	}
	wc, resp, err := d.DialContext(ctx, url, hdr)
	if dl.stop != nil {
		dl.stop()
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		return nil, dialError(err, resp, ctx)
	}
	if ctx.Err() != nil {
		// The deadline cut the socket just as the upgrade finished.
		wc.NetConn().Close()
		return nil, dialError(ctx.Err(), nil, ctx)
	}
	_ = wc.NetConn().SetDeadline(time.Time{})
	c := &Conn{ws: wc, o: o, h: h, done: make(chan struct{}), slot: -1}
	c.Timing = Timing{TCP: dl.tcp, Upgrade: time.Since(dl.start)}
	now := clock()
	c.lastRead.Store(now)
	c.lastWrite.Store(now)
	if o.KeepAlive > 0 || o.IdleTimeout > 0 {
		sweep.schedule(c, now+int64(c.nextTick(now)))
	}
	c.startReading(dl, rb)
	return c, nil
}

// wsScheme turns an http(s) URL into the ws(s) one gorilla dials.
func wsScheme(url string) string {
	switch {
	case strings.HasPrefix(url, "http://"):
		return "ws://" + url[len("http://"):]
	case strings.HasPrefix(url, "https://"):
		return "wss://" + url[len("https://"):]
	}
	return url
}

// dialing is one connection's way to the 101 answer: it makes the socket
// (and the TLS session) for gorilla, times the connect, and keeps the
// handshake reader (hsConn) whose leftover bytes the frame reader starts
// with, for ws:// and wss:// alike.
type dialing struct {
	o     *Options
	start time.Time
	tcp   time.Duration
	stop  func() bool
	hs    *hsConn
	tls   bool
}

// tcpDial connects and arranges for the socket to be cut when ctx ends:
// gorilla only applies the deadline to the upgrade, so a run that is
// stopped would wait for it.
func (d *dialing) tcpDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nc net.Conn
	var err error
	if d.o.NetDial != nil {
		nc, err = d.o.NetDial(ctx, network, addr)
	} else {
		var nd net.Dialer
		nc, err = nd.DialContext(ctx, network, addr)
	}
	d.tcp = time.Since(d.start)
	if err != nil {
		return nil, err
	}
	d.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return nc, nil
}

// plain is gorilla's dialer for ws://.
func (d *dialing) plain(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.tcpDial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.hs = &hsConn{Conn: nc}
	return d.hs, nil
}

// secure is gorilla's dialer for wss://: the TLS handshake as gorilla's
// own (its config, the host name checked), done here so that the
// handshake reader sits above TLS and holds decrypted bytes.
func (d *dialing) secure(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := d.tcpDial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := d.o.tlsConfig()
	if cfg == nil {
		cfg = &tls.Config{}
	} else {
		cfg = cfg.Clone()
	}
	if cfg.ServerName == "" {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	err = tc.HandshakeContext(ctx)
	if err == nil && !cfg.InsecureSkipVerify {
		err = tc.VerifyHostname(cfg.ServerName)
	}
	if err != nil {
		tc.Close()
		return nil, err
	}
	d.hs, d.tls = &hsConn{Conn: tc}, true
	return d.hs, nil
}

// startReading hands the connection to its reader: the socket's
// readiness for a plain connection where there is a notifier (no
// goroutine while idle), else a reading goroutine (evread.go). Both parse
// frames with the one codec (frames.go), starting with the bytes that
// came with the 101 answer.
func (c *Conn) startReading(dl *dialing, rb int) {
	hs := dl.hs
	left := hs.finish()
	if readiness.Supported() && !dl.tls && !c.o.goroutineReads {
		if sc, ok := hs.Conn.(syscall.Conn); ok {
			if reg, err := readiness.Register(sc, (*evConn)(c), false); err == nil {
				c.reg = reg
			}
		}
	}
	if len(left) > 0 {
		c.ev = evPool.Get().(*evState)
		c.ev.in = append(c.ev.in, left...)
	}
	switch {
	case c.reg == nil:
		c.src, c.rbuf = hs.Conn, make([]byte, rb)
		go c.readFirst()
	case c.ev != nil:
		// Bytes came with the 101 answer: the socket may show no more.
		go c.ready()
	default:
		if err := c.reg.Rearm(); err != nil {
			c.end(&Disconnect{Reason: NetworkReset, Class: sample.Other, Text: err.Error(), Err: err}, false)
		}
	}
}
