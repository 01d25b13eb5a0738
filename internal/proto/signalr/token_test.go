package signalr

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/sample"
)

// tokenIssuer is an app server in the shape Azure SignalR Service gives
// ASP.NET Core apps: its negotiate redirects to the service (a sigtest
// hub) with a short-lived JWT, which the service checks on every request.
type tokenIssuer struct {
	life       time.Duration
	issued     atomic.Int64 // negotiations answered, each with a new token
	revokeUpTo atomic.Int64 // tokens numbered up to this are refused
}

func jwt(exp time.Time, n int64) string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "n": n})
	return enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc(claims) + ".c2ln"
}

func (ti *tokenIssuer) valid(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var c struct{ Exp, N int64 }
	if json.Unmarshal(b, &c) != nil {
		return false
	}
	return time.Now().Unix() < c.Exp && c.N > ti.revokeUpTo.Load()
}

// serve starts the service hub and the app server; the hub URL a client
// is given is the app's.
func (ti *tokenIssuer) serve(t *testing.T, h *sigtest.Hub) string {
	h.TokenValid = ti.valid
	svc := httptest.NewServer(h)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/app/negotiate" {
			http.NotFound(w, r)
			return
		}
		n := ti.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"url":%q,"accessToken":%q}`, svc.URL+"/client/?hub=kitchen", jwt(time.Now().Add(ti.life), n))
	}))
	t.Cleanup(func() {
		h.Close()
		svc.CloseClientConnections()
		svc.Close()
		app.Close()
	})
	return app.URL + "/app"
}

func TestTokenExpiry(t *testing.T) {
	exp := time.Unix(1_900_000_000, 0)
	if got := tokenExpiry(jwt(exp, 1)); !got.Equal(exp) {
		t.Errorf("exp %v", got)
	}
	for _, bad := range []string{"", "opaque-token", "a.b.c", "a." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":"soon"}`)) + ".c",
		"a." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x"}`)) + ".c", "a.!!!.c"} {
		if got := tokenExpiry(bad); !got.IsZero() {
			t.Errorf("%q: exp %v", bad, got)
		}
	}
}

// TestTokenRenewedOn401: the service revokes every token issued so far;
// the next request is refused with 401, the client negotiates with the
// app again once (a poll and a send refused with the same token share the
// renewal), sends again, and the connection goes on.
func TestTokenRenewedOn401(t *testing.T) {
	noLeak(t, nil)
	ti := &tokenIssuer{life: time.Hour}
	h := &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 200 * time.Millisecond}
	hub := ti.serve(t, h)
	o := testOptions()
	o.Transport = LongPolling
	r := &rec{}
	o.Recorder = r
	ctx := ctx5(t)
	c, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if res, err := c.Invoke(ctx, "Add", 1, 2); err != nil || string(res) != "3" {
		t.Fatalf("add: %s %v", res, err)
	}
	ti.revokeUpTo.Store(ti.issued.Load())
	if res, err := c.Invoke(ctx, "Add", 20, 22); err != nil || string(res) != "42" {
		t.Fatalf("add after revocation: %s %v", res, err)
	}
	waitLong(t, "a refused request", func() bool { return h.Unauthorized.Load() > 0 })
	if n := o.Stats.TokenRenewals.Load(); n != 1 || ti.issued.Load() != 2 {
		t.Errorf("renewals %d, negotiations %d", n, ti.issued.Load())
	}
	if d := c.Disconnect(); d != nil {
		t.Errorf("ended: %v", d)
	}
	for _, cl := range r.classes("poll") {
		if cl != sample.OK {
			t.Errorf("poll %s", cl)
		}
	}
	if got := r.classes("negotiate"); len(got) != 2 || got[0] != sample.OK || got[1] != sample.OK {
		t.Errorf("negotiate %v", got)
	}
}

// TestTokenRenewedBeforeExpiry: tokens live about two seconds; a long-
// polling connection held for several lifetimes renews each before it
// expires, and no poll fails.
func TestTokenRenewedBeforeExpiry(t *testing.T) {
	noLeak(t, nil)
	ti := &tokenIssuer{life: 2 * time.Second}
	h := &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 200 * time.Millisecond}
	hub := ti.serve(t, h)
	o := testOptions()
	o.Transport = LongPolling
	r := &rec{}
	o.Recorder = r
	ctx := ctx5(t)
	c, err := Connect(ctx, hub, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitLong(t, "two renewals", func() bool { return o.Stats.TokenRenewals.Load() >= 2 })
	if res, err := c.Invoke(ctx, "Add", 20, 22); err != nil || string(res) != "42" {
		t.Fatalf("add: %s %v", res, err)
	}
	if d := c.Disconnect(); d != nil {
		t.Errorf("ended: %v", d)
	}
	if n := o.Stats.TokenRenewals.Load(); ti.issued.Load() != 1+n {
		t.Errorf("renewals %d, negotiations %d", n, ti.issued.Load())
	}
	for _, cl := range r.classes("poll") {
		if cl != sample.OK {
			t.Errorf("poll %s", cl)
		}
	}
}

// TestStatefulReconnectRenewsToken: the service revokes the tokens it
// issued, then the socket is cut: the reconnect's dial is refused with
// 401, the token is renewed once at the app, and the next dial resumes
// the connection with the same connection token.
func TestStatefulReconnectRenewsToken(t *testing.T) {
	noLeak(t, nil)
	ti := &tokenIssuer{life: time.Hour}
	h := &sigtest.Hub{Transports: []string{"WebSockets"}, StatefulReconnect: true}
	h.TokenValid = ti.valid
	svc := httptest.NewServer(h)
	p := sigtest.NewCutProxy(t, svc.Listener.Addr().String())
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ti.issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"url":%q,"accessToken":%q}`, "http://"+p.Addr()+"/client/?hub=kitchen", jwt(time.Now().Add(ti.life), n))
	}))
	t.Cleanup(func() {
		h.Close()
		svc.CloseClientConnections()
		svc.Close()
		app.Close()
	})
	o := statefulOptions(JSON)
	ctx := ctx5(t)
	c, err := Connect(ctx, app.URL+"/app", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.sf == nil || c.tk == nil {
		t.Fatalf("stateful %v, expiring token %v", c.sf != nil, c.tk != nil)
	}
	ti.revokeUpTo.Store(ti.issued.Load())
	p.Cut()
	waitLong(t, "the resume", func() bool { return h.Reconnects.Load() == 1 })
	if res, err := c.Invoke(ctx, "Add", 20, 22); err != nil || string(res) != "42" {
		t.Fatalf("add after resume: %s %v", res, err)
	}
	st := o.Stats
	if st.TokenRenewals.Load() != 1 || ti.issued.Load() != 2 || h.Unauthorized.Load() != 1 || st.Reconnects.Load() != 1 || st.Lost.Load() != 0 {
		t.Errorf("renewals %d, negotiations %d, 401s %d, reconnects %d, lost %d", st.TokenRenewals.Load(), ti.issued.Load(),
			h.Unauthorized.Load(), st.Reconnects.Load(), st.Lost.Load())
	}
}

// TestCloseDuringTokenRenewal: a reconnect's dial is refused with 401 and
// the app server, asked for a new token, never answers. CloseAtEnd during
// that renewal ends the connection at once instead of waiting for the
// negotiate timeout or the reconnect window (an hour each here, so a
// Close that waits for either trips the safety net).
func TestCloseDuringTokenRenewal(t *testing.T) {
	noLeak(t, nil)
	ti := &tokenIssuer{life: time.Hour}
	h := &sigtest.Hub{Transports: []string{"WebSockets"}, StatefulReconnect: true}
	h.TokenValid = ti.valid
	svc := httptest.NewServer(h)
	p := sigtest.NewCutProxy(t, svc.Listener.Addr().String())
	release := make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := ti.issued.Add(1); n > 1 {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"url":%q,"accessToken":%q}`, "http://"+p.Addr()+"/client/?hub=kitchen", jwt(time.Now().Add(ti.life), 1))
	}))
	t.Cleanup(func() {
		h.Close()
		svc.CloseClientConnections()
		svc.Close()
		app.Close()
	})
	t.Cleanup(func() { close(release) })
	o := statefulOptions(JSON)
	o.ReconnectWindow = time.Hour
	o.NegotiateTimeout = time.Hour
	r := &rec{}
	o.Recorder = r
	ctx := ctx5(t)
	c, err := Connect(ctx, app.URL+"/app", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.sf == nil || c.tk == nil {
		t.Fatalf("stateful %v, expiring token %v", c.sf != nil, c.tk != nil)
	}
	ti.revokeUpTo.Store(1)
	p.Cut()
	waitLong(t, "the renewal", func() bool { return ti.issued.Load() == 2 })
	closed := make(chan struct{})
	go func() {
		c.CloseAtEnd()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("CloseAtEnd still waiting for the token renewal")
	}
	st := o.Stats
	if st.ClosedAtEnd.Load() != 1 || st.Open.Load() != 0 || st.ReconnectFailures.Load() != 0 || h.Unauthorized.Load() != 1 {
		t.Errorf("closed at end %d open %d failures %d 401s %d",
			st.ClosedAtEnd.Load(), st.Open.Load(), st.ReconnectFailures.Load(), h.Unauthorized.Load())
	}
	// The renewal Close cut short is no failed negotiate.
	if got := r.classes("negotiate"); len(got) != 1 || got[0] != sample.OK {
		t.Errorf("negotiate %v", got)
	}
}
