package signalr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// httpConn is the Server-Sent Events or long-polling transport: messages
// from the server come on a held GET (one event stream, or one poll after
// another), messages to it are POSTs, one at a time as the spec requires.
// Keep-alive and server-timeout share one timer, as in package ws.
type httpConn struct {
	kind Transport
	o    *Options
	h    *Conn
	hc   *http.Client
	url  string // hub URL with id
	hdr  http.Header
	tok  string

	ctx    context.Context // ends the receive side
	cancel context.CancelFunc

	smu       sync.Mutex // one POST at a time
	lastRead  atomic.Int64
	lastWrite atomic.Int64
	timer     *time.Timer
	closing   atomic.Bool
	ended     atomic.Bool
	done      chan struct{}

	mu   sync.Mutex
	disc *ws.Disconnect
}

var httpBase = time.Now()

func hclock() int64 { return int64(time.Since(httpBase)) }

// pollTimeout bounds one long poll when the server timeout does not
// (ASP.NET Core servers answer within 90 s; the JavaScript client waits
// 100 s).
const pollTimeout = 100 * time.Second

// sendTimeout bounds one POST of a message; a variable for the test that
// makes it long enough to show which bound ended a send.
var sendTimeout = 10 * time.Second

// closeTimeout bounds what closing sends: the Close message's POST and the
// DELETE. A hub that does not answer them must not add the send timeout
// to the end of a run; the connection ends either way.
const closeTimeout = time.Second

// startHTTP opens the receive side: for SSE, the event stream up to its
// 200 answer (timed as "sse open"); for long polling, the poll loop,
// whose first poll the handshake answer will come on.
func startHTTP(ctx context.Context, kind Transport, o *Options, c *Conn, ep endpoint, hdr http.Header) (*httpConn, time.Duration, error) {
	u, err := transportURL(ep, false, false)
	if err != nil {
		return nil, 0, &Error{Phase: phaseOf(kind), Class: sample.Other, Msg: "bad hub URL: " + err.Error(), Err: err}
	}
	h := &httpConn{kind: kind, o: o, h: c, hc: o.streamClient(), url: u, hdr: hdr, tok: ep.token, done: make(chan struct{})}

	h.ctx, h.cancel = context.WithCancel(context.Background())
	now := hclock()
	h.lastRead.Store(now)
	h.lastWrite.Store(now)
	// The timer exists before anything that may end the connection runs
	// (end stops it); it first fires after the Reset below.
	h.timer = time.AfterFunc(time.Hour, h.tick)
	var open time.Duration
	if kind == ServerSentEvents {
		t0 := time.Now()
		// ep.base parsed above; the token cannot make it fail.
		su, _ := transportURL(ep, false, true)
		body, err := h.openStream(ctx, su)
		if err != nil {
			h.timer.Stop()
			h.cancel()
			return nil, 0, err
		}
		open = time.Since(t0)
		// Set before anything can arrive: a message may make the hub
		// connection send.
		c.t = h
		go h.readStream(body, &sseParser{max: int(o.maxMessage()) + maxVarint}, make([]byte, sseReadSize))
	} else {
		c.t = h
		go h.pollLoop()
	}
	h.timer.Reset(h.nextTick(hclock()))
	return h, open, nil
}

func phaseOf(kind Transport) string {
	if kind == ServerSentEvents {
		return OpSSEOpen.name
	}
	return OpPoll.name
}

// request builds a request carrying the connection's access token, the
// same one for the connection's life (token.go says why).
func (h *httpConn) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url, r)
	if err != nil {
		return nil, err
	}
	for k, v := range h.hdr {
		req.Header[k] = v
	}
	if h.tok != "" {
		req.Header.Set("Authorization", "Bearer "+h.tok)
	}
	return req, nil
}

// openStream GETs the event stream (streamURL: the URL with the access
// token in its query) and checks its answer.
func (h *httpConn) openStream(ctx context.Context, streamURL string) (io.ReadCloser, error) {
	fail := func(cl sample.Class, msg string, err error) error {
		return &Error{Phase: OpSSEOpen.name, Class: cl, Msg: msg, Err: err}
	}
	req, err := h.request(h.ctx, http.MethodGet, nil)
	if err != nil {
		return nil, fail(sample.Other, err.Error(), err)
	}
	if req.URL, err = url.Parse(streamURL); err != nil {
		return nil, fail(sample.Other, err.Error(), err)
	}
	// The token is in the query, as the JavaScript client's EventSource
	// sends it, and there only.
	req.Header.Del("Authorization")
	req.Header.Set("Accept", "text/event-stream")
	// The stream outlives ctx (the connect deadline); only its answer is
	// bounded by it, and by the upgrade timeout as a WebSocket's upgrade
	// is: a hub that takes the GET and never answers must not hold the
	// attempt for the whole run, and auto goes on to long polling only
	// when the run's own context is still live.
	octx, ocancel := ctx, context.CancelFunc(func() {})
	to := dflt(h.o.UpgradeTimeout, 15*time.Second)
	if to > 0 {
		octx, ocancel = context.WithTimeout(ctx, to)
	}
	defer ocancel()
	stop := context.AfterFunc(octx, h.cancel)
	resp, err := h.hc.Do(req)
	if !stop() {
		if err == nil {
			resp.Body.Close()
		}
		if ctx.Err() == nil {
			return nil, fail(sample.Timeout, "no answer to the event-stream request within "+to.String(), octx.Err())
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fail(sample.Timeout, "no answer to the event-stream request in time", ctx.Err())
		}
		return nil, fail(sample.Interrupted, "canceled", ctx.Err())
	}
	if err != nil {
		return nil, fail(httpc.Classify(err), err.Error(), err)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		resp.Body.Close()
		cl := sample.FromStatus(resp.StatusCode)
		if cl == sample.OK {
			cl = sample.Other
		}
		if ct == "" {
			ct = "no content type"
		}
		return nil, fail(cl, fmt.Sprintf("event stream answered %s with %s", resp.Status, ct), nil)
	}
	return resp.Body, nil
}

// sseReadSize is the read size on the event stream: the HTTP client
// buffers the socket already, so a small buffer of our own costs only
// copies, and it is what an idle stream keeps.
const sseReadSize = 512

// readStream reads one chunk of the event stream and hands on its events,
// then continues on a fresh goroutine: handling a message grows a
// goroutine's stack to several KB, which an idle stream parked in Read
// would keep for good (as package ws does for the same reason).
func (h *httpConn) readStream(body io.ReadCloser, p *sseParser, buf []byte) {
	n, err := body.Read(buf)
	if n > 0 {
		h.lastRead.Store(hclock())
		if perr := p.feed(buf[:n], h.deliver); perr != nil {
			body.Close()
			h.fail(perr)
			return
		}
	}
	if err == nil {
		go h.readStream(body, p, buf)
		return
	}
	body.Close()
	if !h.closing.Load() && !h.ended.Load() {
		// A server may end the stream of a connection whose send it
		// refuses before that send's 401 is read: the send in flight
		// decides the end first, so the refusal is not counted a reset.
		// Sends are bounded by sendTimeout.
		h.smu.Lock()
		h.smu.Unlock() //nolint:staticcheck // SA2001: waits out the send in flight
	}
	switch {
	case h.closing.Load() || h.ended.Load():
		h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
	case errors.Is(err, io.EOF) && p.pending() != "":
		h.end(&ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: event stream ended inside an event: " + p.pending()})
	case errors.Is(err, io.EOF):
		h.end(&ws.Disconnect{Reason: ws.NetworkReset, Class: sample.ConnReset, Text: "server ended the event stream"})
	default:
		cl := httpc.Classify(err)
		if cl == sample.Other {
			cl = sample.ConnReset
		}
		h.end(&ws.Disconnect{Reason: ws.NetworkReset, Class: cl, Text: err.Error(), Err: err})
	}
}

// deliver hands one frame to the hub connection.
func (h *httpConn) deliver(data []byte) error {
	if ct := h.o.wsOptions().Counters; ct != nil {
		ct.MsgsIn.Add(1)
		ct.BytesIn.Add(int64(len(data)))
	}
	return h.h.Message(nil, h.o.Protocol.wsType(), data)
}

// fail ends the connection for an error the hub layer or a parser
// returned.
func (h *httpConn) fail(err error) {
	var d *ws.Disconnect
	if !errors.As(err, &d) {
		d = &ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: " + err.Error(), Err: err}
	}
	h.end(d)
}

// pollLoop polls until the connection ends; each poll is an operation of
// its own (OpPoll), apart from the hub calls whose answers it carries.
func (h *httpConn) pollLoop() {
	for !h.ended.Load() {
		if !h.poll() {
			return
		}
	}
}

// poll is one long poll: false means the connection ended.
func (h *httpConn) poll() bool {
	to := pollTimeout
	if it := h.o.wsOptions().IdleTimeout; it > 0 {
		// The server timeout ends the connection first; this only frees
		// the request should the timer lose the race.
		to = it + time.Second
	}
	ctx, cancel := context.WithTimeout(h.ctx, to)
	defer cancel()
	resp, t0, ok := h.sendPoll(ctx)
	if !ok {
		return false
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, h.o.maxMessage()+maxVarint+1))
	resp.Body.Close()
	d := time.Since(t0)
	if !h.pollAnswered(resp, body, rerr, d) {
		return false
	}
	h.o.record(OpPoll, sample.OK, d, nil)
	if len(body) > 0 {
		h.lastRead.Store(hclock())
		if err := h.deliver(body); err != nil {
			h.fail(err)
			return false
		}
	}
	return true
}

// sendPoll sends the poll's GET; false means it failed and the
// connection ended.
func (h *httpConn) sendPoll(ctx context.Context) (*http.Response, time.Time, bool) {
	req, err := h.request(ctx, http.MethodGet, nil)
	if err != nil {
		h.fail(err)
		return nil, time.Time{}, false
	}
	t0 := time.Now()
	resp, err := h.hc.Do(req)
	if err != nil {
		if h.closing.Load() || h.ended.Load() {
			h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
			return nil, t0, false
		}
		cl := httpc.Classify(err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cl = sample.Timeout
		}
		h.o.record(OpPoll, cl, time.Since(t0), err)
		h.end(&ws.Disconnect{Reason: ws.NetworkReset, Class: cl, Text: "poll: " + err.Error(), Err: err})
		return nil, t0, false
	}
	return resp, t0, true
}

// pollAnswered checks a poll's answer: false means it ended the
// connection (the close we asked for, the server's end, or a failure).
func (h *httpConn) pollAnswered(resp *http.Response, body []byte, rerr error, d time.Duration) bool {
	if resp.StatusCode != http.StatusOK && (h.closing.Load() || h.h.closing.Load()) {
		// We sent the Close message or the DELETE: the server forgetting
		// the connection (204, or 404 for a poll that raced the close) is
		// the end we asked for, not a failed poll.
		h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
		return false
	}
	switch {
	case rerr != nil:
		if h.closing.Load() || h.ended.Load() {
			h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
			return false
		}
		cl := httpc.Classify(rerr)
		h.o.record(OpPoll, cl, d, rerr)
		h.end(&ws.Disconnect{Reason: ws.NetworkReset, Class: cl, Text: "poll: " + rerr.Error(), Err: rerr})
		return false
	case resp.StatusCode == http.StatusNoContent:
		// The server ended the connection (or answered our DELETE).
		h.o.record(OpPoll, sample.OK, d, nil)
		if h.closing.Load() {
			h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
		} else {
			h.end(&ws.Disconnect{Reason: ws.ServerClose, Class: sample.ServerClose, Text: "server ended the long-polling connection (204 No Content)"})
		}
		return false
	case resp.StatusCode != http.StatusOK:
		cl := sample.FromStatus(resp.StatusCode)
		e := &Error{Phase: OpPoll.name, Class: cl, Msg: "poll answered " + resp.Status}
		if refusedToken(resp.StatusCode, h.tok) {
			e.Msg, e.Err = e.Msg+": "+errTokenRefused.Error(), errTokenRefused
		}
		h.o.record(OpPoll, cl, d, e)
		h.end(&ws.Disconnect{Reason: endReason(e.Err, ws.ServerClose), Class: cl, Text: e.Msg, Err: e})
		return false
	case int64(len(body)) > h.o.maxMessage()+maxVarint:
		e := fmt.Errorf("poll answer longer than %d bytes", h.o.maxMessage())
		h.o.record(OpPoll, sample.Other, d, e)
		h.end(&ws.Disconnect{Reason: ws.ProtocolError, Class: sample.Other, Text: "signalr: " + e.Error(), Err: e})
		return false
	}
	return true
}

// Send POSTs one message.
func (h *httpConn) Send(_ ws.MessageType, b []byte) error {
	if h.ended.Load() {
		return h.endedError()
	}
	h.smu.Lock()
	defer h.smu.Unlock()
	// The hub connection marks itself closing before its Close message.
	closing := func() bool { return h.closing.Load() || h.h.closing.Load() }
	to := sendTimeout
	if closing() {
		to = closeTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), to)
	defer cancel()
	req, err := h.request(ctx, http.MethodPost, b)
	if err != nil {
		return &ws.Error{Op: "write", Class: sample.Other, Msg: err.Error(), Err: err}
	}
	ct := "text/plain;charset=UTF-8"
	if h.o.Protocol == MessagePack {
		ct = "application/octet-stream"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := h.hc.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			cl := sample.FromStatus(resp.StatusCode)
			if cl == sample.OK {
				cl = sample.Other
			}
			e := &ws.Error{Op: "write", Class: cl, Msg: "send answered " + resp.Status}
			if refusedToken(resp.StatusCode, h.tok) {
				e.Msg, e.Err = e.Msg+": "+errTokenRefused.Error(), errTokenRefused
			}
			if !closing() {
				// Anything but 200 means the server dropped the
				// connection (TransportProtocols.md, HTTP Post).
				h.end(&ws.Disconnect{Reason: endReason(e.Err, ws.WriteFailed), Class: cl, Text: e.Msg, Err: e})
			}
			return e
		}
	} else {
		if h.ended.Load() {
			return h.endedError()
		}
		cl := httpc.Classify(err)
		if cl == sample.Other {
			cl = sample.ConnReset
		}
		if !closing() {
			// Not while closing: Close goes on to end the connection as
			// the close it is.
			h.end(&ws.Disconnect{Reason: ws.WriteFailed, Class: cl, Text: err.Error(), Err: err})
		}
		return &ws.Error{Op: "write", Class: cl, Msg: err.Error(), Err: err}
	}
	h.lastWrite.Store(hclock())
	if c := h.o.wsOptions().Counters; c != nil {
		c.MsgsOut.Add(1)
		c.BytesOut.Add(int64(len(b)))
	}
	return nil
}

func (h *httpConn) endedError() error {
	<-h.done
	d := h.Disconnect()
	return &ws.Error{Op: "write", Class: d.Class, Msg: "connection ended: " + d.Error(), Err: d}
}

func (h *httpConn) Done() <-chan struct{} { return h.done }

func (h *httpConn) Disconnect() *ws.Disconnect {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.disc
}

// Close ends the receive side: long polling tells the server with a
// DELETE (the spec's graceful end), an event stream is simply dropped.
func (h *httpConn) Close(int, string) error {
	if h.ended.Load() || !h.closing.CompareAndSwap(false, true) {
		<-h.done
		return nil
	}
	if h.kind == LongPolling {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		if req, err := h.request(ctx, http.MethodDelete, nil); err == nil {
			if resp, err := h.hc.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
				resp.Body.Close()
			}
		}
		cancel()
	}
	h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
	// The poll may have ended the connection first (its answer to our
	// Close): end then returned at once, so wait until that end recorded
	// its reason, or Disconnect could still be nil after Close.
	<-h.done
	return nil
}

func (h *httpConn) Abort() {
	h.closing.Store(true)
	h.end(&ws.Disconnect{Reason: ws.ClientClose, Class: sample.OK})
}

// end records the first reason and tears the transport down.
func (h *httpConn) end(d *ws.Disconnect) {
	if !h.ended.CompareAndSwap(false, true) {
		return
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.cancel()
	if d2 := h.h.Closed(nil, d); d2 != nil {
		d = d2
	}
	h.mu.Lock()
	h.disc = d
	h.mu.Unlock()
	close(h.done)
}

func (h *httpConn) nextTick(now int64) time.Duration {
	o := h.o.wsOptions()
	next := int64(1<<62 - 1)
	if ka := o.KeepAlive; ka > 0 && !h.closing.Load() {
		next = min(next, h.lastWrite.Load()+int64(ka))
	}
	if it := o.IdleTimeout; it > 0 {
		next = min(next, h.lastRead.Load()+int64(it))
	}
	return max(time.Duration(next-now), 5*time.Millisecond)
}

func (h *httpConn) tick() {
	if h.ended.Load() {
		return
	}
	o := h.o.wsOptions()
	now := hclock()
	if it := o.IdleTimeout; it > 0 && now-h.lastRead.Load() >= int64(it) {
		h.end(&ws.Disconnect{Reason: ws.PingTimeout, Class: sample.Timeout, Text: "server sent nothing for " + it.String()})
		return
	}
	if ka := o.KeepAlive; ka > 0 && now-h.lastWrite.Load() >= int64(ka) && !h.closing.Load() {
		// A POST may take a while; the timer must not wait on it.
		h.lastWrite.Store(now)
		// A keep-alive that cannot be sent ends the connection in Send.
		go func() { _ = h.Send(o.KeepAliveType, o.KeepAliveMessage) }()
	}
	if !h.ended.Load() {
		h.timer.Reset(h.nextTick(hclock()))
	}
}

// transportURL is the URL for the negotiated connection: ws(s) for the
// WebSocket, http(s) for the others. The access token goes in its query
// only with tokenInQuery (token.go says where): the event stream, and the
// WebSocket when the plan says so; elsewhere it stays in the
// Authorization header, out of the service's and proxies' request logs.
func transportURL(ep endpoint, websocket, tokenInQuery bool) (string, error) {
	u, err := url.Parse(ep.base)
	if err != nil {
		return "", err
	}
	switch {
	case websocket && u.Scheme == "http":
		u.Scheme = "ws"
	case websocket && u.Scheme == "https":
		u.Scheme = "wss"
	case !websocket && u.Scheme == "ws":
		u.Scheme = "http"
	case !websocket && u.Scheme == "wss":
		u.Scheme = "https"
	}
	q := u.Query()
	if ep.id != "" {
		q.Set("id", ep.id)
	}
	if ep.token != "" && tokenInQuery {
		q.Set("access_token", ep.token)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
