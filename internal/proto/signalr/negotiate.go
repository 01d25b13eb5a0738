package signalr

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/sample"
)

// Error is a failed SignalR operation with its failure class decided.
type Error struct {
	Phase string // negotiate, upgrade, handshake, invoke, send, stream, protocol
	Class sample.Class
	Msg   string
	Err   error
	// took is how long the failed request took, recorded with the
	// failure (0: none was timed).
	took time.Duration
}

func (e *Error) Error() string { return e.Phase + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

type negotiateResponse struct {
	ConnectionToken  string `json:"connectionToken"`
	ConnectionID     string `json:"connectionId"`
	NegotiateVersion int    `json:"negotiateVersion"`
	URL              string `json:"url"`
	AccessToken      string `json:"accessToken"`
	// UseStatefulReconnect is the server granting what we asked for.
	UseStatefulReconnect bool   `json:"useStatefulReconnect"`
	Error                string `json:"error"`
	// ProtocolVersion is only in the answer of a classic ASP.NET SignalR
	// (not Core) server, which speaks another protocol altogether.
	ProtocolVersion     json.RawMessage `json:"ProtocolVersion"`
	AvailableTransports []struct {
		Transport       string   `json:"transport"`
		TransferFormats []string `json:"transferFormats"`
	} `json:"availableTransports"`
}

// endpoint is where the WebSocket goes once negotiation is over.
type endpoint struct {
	base  string // hub URL after redirects
	id    string // connectionToken (v1) or connectionId (v0)
	cid   string // connectionId, for logs and group tests
	token string // bearer token, from the plan or the last redirect
	// nr is the final negotiate answer (nil when negotiate was skipped).
	nr *negotiateResponse
}

// errClassicSignalR is the .NET client's answer to a classic ASP.NET
// SignalR server, whose negotiate answer looks like a redirect to a
// relative URL.
const errClassicSignalR = "Detected a connection attempt to an ASP.NET SignalR Server. This client only supports connecting to an ASP.NET Core SignalR Server. See https://aka.ms/signalr-core-differences for details."

// checkNegotiateIDs refuses a final negotiate answer the .NET client
// refuses, in its words.
func checkNegotiateIDs(nr *negotiateResponse) error {
	refuse := func(msg string) error {
		return &Error{Phase: "negotiate", Class: sample.Protocol, Msg: msg, Err: violation(msg)}
	}
	if nr.ConnectionID == "" {
		return refuse("Missing required property 'connectionId'.")
	}
	if nr.NegotiateVersion >= 1 && nr.ConnectionToken == "" {
		return refuse("Missing required property 'connectionToken'.")
	}
	return nil
}

// maxRedirects matches the JavaScript client's limit.
const maxRedirects = 100

// negotiate runs POST {hub}/negotiate?negotiateVersion=1, following
// redirects (Azure SignalR Service answers the app server's negotiate with
// the service URL and an access token for it). Each hop is timed apart:
// the first under first, those that follow a redirect under "negotiate
// redirect". A hop that succeeds is recorded here; one that fails is not:
// its error names the hop in its Phase and carries its latency, and the
// caller records it. usable, when not nil, judges the final answer (what
// it offers); its refusal is that hop's failure, so a negotiate the
// server answered is one sample, never a success and a failure.
func negotiate(ctx context.Context, hc *http.Client, hub string, hdr http.Header, o *Options, first Op, usable func(*negotiateResponse) error) (endpoint, error) {
	ep := endpoint{base: hub, token: o.AccessToken}
	op := first
	for i := 0; ; i++ {
		if i > maxRedirects {
			return ep, &Error{Phase: op.name, Class: sample.Other, Msg: fmt.Sprintf("more than %d redirects", maxRedirects)}
		}
		t0 := time.Now()
		nr, err := negotiateOnce(ctx, hc, ep.base, hdr, ep.token, o.StatefulReconnect)
		if err == nil && nr.Error != "" {
			err = &Error{Phase: "negotiate", Class: sample.Other, Msg: "server error: " + nr.Error}
		}
		if err == nil && nr.URL == "" {
			err = checkNegotiateIDs(nr)
			if err == nil && usable != nil {
				err = usable(nr)
			}
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Phase, e.took = op.name, time.Since(t0)
			}
			return ep, err
		}
		o.record(op, sample.OK, time.Since(t0), nil)
		if nr.URL != "" {
			ep.base = nr.URL
			if nr.AccessToken != "" {
				ep.token = nr.AccessToken
			}
			op = OpNegotiateRedirect
			continue
		}
		ep.cid = nr.ConnectionID
		ep.id = nr.ConnectionID
		if nr.NegotiateVersion >= 1 {
			ep.id = nr.ConnectionToken
		}
		ep.nr = nr
		return ep, nil
	}
}

func negotiateURL(hub string, stateful bool) (string, error) {
	u, err := url.Parse(hub)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.Path += "negotiate"
	if u.RawPath != "" {
		u.RawPath = ""
	}
	q := u.Query()
	q.Set("negotiateVersion", "1")
	if stateful {
		q.Set("useStatefulReconnect", "true")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// maxNegotiateBody bounds what we read of a negotiate answer; real ones
// are a few hundred bytes, an error page may be large.
const maxNegotiateBody = 1 << 20

func negotiateOnce(ctx context.Context, hc *http.Client, hub string, hdr http.Header, token string, stateful bool) (*negotiateResponse, error) {
	nu, err := negotiateURL(hub, stateful)
	if err != nil {
		return nil, &Error{Phase: "negotiate", Class: sample.Other, Msg: "bad hub URL: " + err.Error(), Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, nu, nil)
	if err != nil {
		return nil, &Error{Phase: "negotiate", Class: sample.Other, Msg: err.Error(), Err: err}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		cl := httpc.Classify(err)
		if errors.Is(err, context.Canceled) {
			cl = sample.Interrupted
		}
		return nil, &Error{Phase: "negotiate", Class: cl, Msg: err.Error(), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxNegotiateBody))
	if err != nil {
		return nil, &Error{Phase: "negotiate", Class: httpc.Classify(err), Msg: "reading answer: " + err.Error(), Err: err}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		cl := sample.FromStatus(resp.StatusCode)
		if cl == sample.OK {
			cl = sample.Other
		}
		// The body says why (an error object, a gateway's page): keep its
		// start, so the Errors table shows what the server answered.
		msg := resp.Status
		if len(body) > 0 {
			msg += ": " + string(metrics.AppendBody(nil, body, []byte(resp.Header.Get("Content-Type"))))
		}
		return nil, &Error{Phase: "negotiate", Class: cl, Msg: msg, Err: retryAfterOf(resp.Header, time.Now())}
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	trimmed := bytes.TrimSpace(body)
	if !strings.Contains(ct, "json") && (len(trimmed) == 0 || trimmed[0] != '{') {
		if ct == "" {
			ct = "no content type"
		}
		return nil, &Error{Phase: "negotiate", Class: sample.Other, Msg: "expected JSON, got " + ct}
	}
	var nr negotiateResponse
	if err := json.Unmarshal(body, &nr); err != nil {
		return nil, badNegotiateJSON(err, body, strings.Contains(ct, "json"))
	}
	if nr.ProtocolVersion != nil {
		return nil, &Error{Phase: "negotiate", Class: sample.Protocol, Msg: errClassicSignalR, Err: violation(errClassicSignalR)}
	}
	return &nr, nil
}

// errInvalidNegotiate is the official clients' refusal of a negotiate
// answer they cannot read (the .NET client's words; the JavaScript
// client fails in JSON.parse).
const errInvalidNegotiate = "Invalid negotiation response received."

// badNegotiateJSON classes a 2xx negotiate answer json.Unmarshal refused.
// An answer declared JSON is the hub speaking, and one that does not
// parse, or parses with a field of the wrong type, is refused by the
// official clients: protocol. An answer not declared JSON (one that was
// only read as JSON because it starts with '{') that does not parse is
// more likely not the hub's, as an HTML error page is not: other, as
// before.
func badNegotiateJSON(err error, body []byte, declared bool) *Error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		// Valid JSON whatever the content type: judged as the hub's.
		msg := "Expected a JSON Object."
		if te.Field != "" {
			name := te.Field[strings.LastIndexByte(te.Field, '.')+1:]
			msg = "Expected '" + name + "' to be of type " + jsonKind(te.Type.Kind()) + "."
		}
		return &Error{Phase: "negotiate", Class: sample.Protocol, Msg: "invalid answer " + snippet(body) + ": " + msg, Err: violation(msg)}
	case declared:
		msg := "malformed JSON: " + err.Error() + " in " + snippet(body)
		if len(bytes.TrimSpace(body)) == 0 {
			msg = "malformed JSON: empty answer"
		}
		return &Error{Phase: "negotiate", Class: sample.Protocol, Msg: msg, Err: violation(errInvalidNegotiate)}
	}
	return &Error{Phase: "negotiate", Class: sample.Other, Msg: "expected JSON, got " + snippet(body), Err: err}
}

// jsonKind names what a negotiate answer's field should have held, as
// the .NET client names JSON token types.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "String"
	case reflect.Slice, reflect.Array:
		return "Array"
	case reflect.Struct, reflect.Map:
		return "Object"
	case reflect.Bool:
		return "Boolean"
	}
	return "Number"
}

// sharedHTTP is used for negotiate when the plan gives no client and no
// TLS settings: one pool, kept small, so a ramp of thousands of
// connections reuses a few sockets.
var sharedHTTP = newNegotiateClient(nil)

// newStreamClient makes the client of a population's SSE and long-polling
// connections: each holds a request for its life, so the per-connection
// buffers are small (the requests are a few hundred bytes, and reads are
// copied out in small chunks anyway) and, over TLS, HTTP/2 carries many
// streams on one connection.
func newStreamClient(conf *tls.Config) *http.Client {
	if conf != nil {
		conf = conf.Clone()
	}
	c := newNegotiateClient(conf)
	t := c.Transport.(*http.Transport)
	t.ReadBufferSize, t.WriteBufferSize = 1<<10, 512
	return c
}

// newNegotiateClient makes a negotiate client; conf must be the client's
// own (net/http writes its NextProtos).
func newNegotiateClient(conf *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			TLSClientConfig:     conf,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   true,
		},
		// Negotiate redirects are JSON bodies, not HTTP 3xx; a 3xx is a
		// misconfigured URL and should be reported, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
