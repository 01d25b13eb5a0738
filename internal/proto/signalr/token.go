package signalr

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/sample"
)

// Azure SignalR Service answers the app server's negotiate with the
// service URL and an access token: a JWT whose exp ends its use. Requests
// that carry it after that (long polls, sends, a stateful reconnect's
// dial) are refused with 401. Renewing it means negotiating with the app
// server again, as the .NET client's access-token provider does; only the
// token is taken, the connection keeps its id. A token is renewed when
// three quarters of its life have passed, at the next request that needs
// it (an idle WebSocket holds no timer for it), or at once on a 401.

// tokenState is a connection's expiring access token.
type tokenState struct {
	hub string
	hdr http.Header

	mu      sync.Mutex
	ep      endpoint
	renewAt time.Time
}

// tokenExpiry reads a JWT's exp claim; zero when the token is not a JWT
// or has none. The signature is not checked: only the server can.
func tokenExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(claims.Exp), 0)
}

// renewTime is when a token got at now and expiring at exp is renewed.
func renewTime(now, exp time.Time) time.Time {
	return now.Add(exp.Sub(now) * 3 / 4)
}

// newTokenState returns nil when the endpoint's token does not expire
// (or came from the plan, which negotiating again cannot renew).
func newTokenState(hub string, hdr http.Header, ep endpoint, planToken string) *tokenState {
	if ep.token == "" || ep.token == planToken {
		return nil
	}
	exp := tokenExpiry(ep.token)
	if exp.IsZero() {
		return nil
	}
	return &tokenState{hub: hub, hdr: hdr, ep: ep, renewAt: renewTime(time.Now(), exp)}
}

// endpoint is the connection's endpoint with a token fit to use: renewed
// first when due, or when failed is the token a server just refused.
func (c *Conn) endpoint(ctx context.Context, failed string) endpoint {
	ts := c.tk
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if failed != "" && failed != ts.ep.token {
		return ts.ep // renewed meanwhile
	}
	if failed == "" && time.Now().Before(ts.renewAt) {
		return ts.ep
	}
	tok, exp, err := c.renewToken(ctx)
	if err != nil {
		// Keep the old token: the server's answer to it says the rest.
		ts.renewAt = time.Now().Add(time.Second)
		return ts.ep
	}
	ts.ep.token = tok
	ts.renewAt = renewTime(time.Now(), exp)
	if exp.IsZero() {
		ts.renewAt = time.Now().Add(24 * time.Hour)
	}
	if c.stat != nil {
		c.stat.TokenRenewals.Add(1)
	}
	return ts.ep
}

// renewToken negotiates with the app server again and takes the access
// token of its redirect, without following it (that would negotiate a
// connection with the service nobody uses). ctx bounds it further: a
// stateful reconnect's window, cut short by Close.
func (c *Conn) renewToken(parent context.Context) (string, time.Time, error) {
	o := c.o
	ctx, cancel := context.WithTimeout(parent, dflt(o.NegotiateTimeout, 15*time.Second))
	defer cancel()
	base, tok := c.tk.hub, o.AccessToken
	t0 := time.Now()
	for i := 0; i <= maxRedirects; i++ {
		nr, err := negotiateOnce(ctx, o.httpClient(), base, c.tk.hdr, tok, o.StatefulReconnect)
		if err == nil && nr.Error != "" {
			err = &Error{Phase: "negotiate", Class: sample.Other, Msg: "server error: " + nr.Error}
		}
		if err == nil && nr.URL == "" {
			err = &Error{Phase: "negotiate", Class: sample.Other, Msg: "renewing the access token: the answer has no redirect"}
		}
		if err != nil && errors.Is(parent.Err(), context.Canceled) {
			// Close cut the renewal short: no negotiate failed.
			return "", time.Time{}, err
		}
		if err != nil {
			e, _ := err.(*Error)
			cl := sample.Other
			if e != nil {
				cl = e.Class
			}
			o.record(OpNegotiate, cl, time.Since(t0), err)
			return "", time.Time{}, err
		}
		if nr.AccessToken != "" {
			o.record(OpNegotiate, sample.OK, time.Since(t0), nil)
			return nr.AccessToken, tokenExpiry(nr.AccessToken), nil
		}
		base = nr.URL
	}
	err := &Error{Phase: "negotiate", Class: sample.Other, Msg: "renewing the access token: no redirect carried one"}
	o.record(OpNegotiate, err.Class, time.Since(t0), err)
	return "", time.Time{}, err
}
