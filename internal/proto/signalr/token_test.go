package signalr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/proto/signalr/sigtest"
	"github.com/stampede-load/stampede/internal/proto/ws"
	"github.com/stampede-load/stampede/internal/sample"
)

// The scenario of testdata/jsclient_*.txt (testdata/jsrecord/main.go):
// the service accepts a token for jsTokenUses requests, and the client
// is restarted jsRestarts times.
const (
	jsTokenUses = 6
	jsRestarts  = 2
)

var storyLine = regexp.MustCompile(`^(app|service) (\S+) (\S+) auth=(.+) -> (\d+)$`)

// tokenStory is what a wire trace of sigtest.Azure says about tokens:
// each negotiate (the service's with the token it carried) and each
// token's first refusal, up to the last negotiate with the service. It
// fails when a service request carries a token other than the one its
// connection was given (the one negotiated before its first request): a
// token renewed, or one mixed up. A request of an ended connection may
// still arrive after the next negotiate.
func tokenStory(t *testing.T, lines []string) []string {
	t.Helper()
	var story []string
	cur, refused, last := "", map[string]bool{}, 0
	given := map[string]string{} // connection → its token
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			continue
		}
		m := storyLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("trace line %q", l)
		}
		server, method, target, auth, status := m[1], m[2], m[3], m[4], m[5]
		negotiate := method == "POST" && strings.Contains(target, "/negotiate?")
		if id := connOf(target, ""); id != "" && given[id] == "" {
			given[id] = cur
		}
		if q := regexp.MustCompile(`access_token=([^&]+)`).FindStringSubmatch(target); q != nil {
			auth = strings.ReplaceAll(q[1], "+", " ")
		}
		switch {
		case server == "app" && negotiate:
			story = append(story, "app negotiate")
		case negotiate:
			cur = auth
			story = append(story, "service negotiate with "+auth+" -> "+status)
			last = len(story)
		case given[connOf(target, cur)] != auth:
			t.Errorf("%q: the connection was given %s", l, given[connOf(target, cur)])
		case status == "401" && !refused[auth]:
			refused[auth] = true
			story = append(story, auth+" refused")
		}
	}
	return story[:last]
}

// tokenPlaces says, for each kind of request in a trace (server and
// method; GET(sse) is the event stream), where its access token went: in
// the Authorization header, in the query's access_token, or both.
func tokenPlaces(t *testing.T, lines []string) map[string]string {
	t.Helper()
	places := map[string]string{}
	for _, l := range lines {
		m := storyLine.FindStringSubmatch(l)
		if m == nil || m[1] != "service" {
			continue
		}
		var where []string
		if m[4] != "none" {
			where = append(where, "header")
		}
		if strings.Contains(m[3], "access_token=") {
			where = append(where, "query")
		}
		kind := m[2]
		if strings.Contains(m[3], "/negotiate?") {
			kind += " negotiate"
		}
		p := strings.Join(where, "+")
		if old, ok := places[kind]; ok && old != p {
			t.Errorf("%s requests carry the token in %s and in %s", kind, old, p)
		}
		places[kind] = p
	}
	return places
}

// connOf is the connection a trace line's target names, or def.
func connOf(target, def string) string {
	if m := regexp.MustCompile(`[?&]id=([^&]+)`).FindStringSubmatch(target); m != nil {
		return m[1]
	}
	return def
}

// driveLikeJS runs the fixture's scenario with stampede's client: invoke
// Add until the connection ends, then connect again, as the run does
// after its reconnect delay, until it has restarted jsRestarts times.
func driveLikeJS(t *testing.T, hub string, o *Options) {
	t.Helper()
	ctx := ctx5(t)
	restarts := 0
	c, err := Connect(ctx, hub, nil, o)
	for i := 0; err == nil && i < 100; i++ {
		if _, ierr := c.Invoke(ctx, "Add", i, 1); ierr == nil {
			continue
		}
		<-c.Done()
		if restarts == jsRestarts {
			break
		}
		restarts++
		c, err = Connect(ctx, hub, nil, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if restarts != jsRestarts {
		t.Fatalf("restarted %d times", restarts)
	}
}

// TestTokenLikeJavaScriptClient drives stampede's client through the
// Azure imitation the official JavaScript client was recorded against
// (testdata/jsclient_*.txt): the redirect's token is used for every
// request of its connection, until the service refuses it; then the
// connection ends and the next one starts from the app's negotiate. The
// stories of the two traces are the same, and each kind of request
// carries the token where the JavaScript client's does (the event stream
// in its query, polls and sends in their header). The negotiates are
// timed apart:
// the app's first, the service's (redirect), and the restarts'.
func TestTokenLikeJavaScriptClient(t *testing.T) {
	for _, tr := range []Transport{LongPolling, ServerSentEvents} {
		t.Run(tr.String(), func(t *testing.T) {
			fixture, err := os.ReadFile(filepath.Join("testdata", "jsclient_"+negotiateNames[tr]+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			want := tokenStory(t, strings.Split(strings.TrimSpace(string(fixture)), "\n"))
			a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{negotiateNames[tr]}, PollHold: 100 * time.Millisecond},
				TokenUses: jsTokenUses, Record: true}
			a.Start()
			t.Cleanup(a.Close)
			o := testOptions()
			o.Transport = tr
			r := &rec{}
			o.Recorder = r
			driveLikeJS(t, a.AppURL(), o)
			if got := tokenStory(t, a.Requests()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("stampede:\n%s\nofficial JavaScript client:\n%s\nstampede's trace:\n%s",
					strings.Join(got, "\n"), strings.Join(want, "\n"), strings.Join(a.Requests(), "\n"))
			}
			checkRestartCounts(t, o.Stats, r)
			js := tokenPlaces(t, strings.Split(string(fixture), "\n"))
			for kind, where := range tokenPlaces(t, a.Requests()) {
				if want, ok := js[kind]; ok && where != want {
					t.Errorf("%s: the token goes in %s, the JavaScript client's in %s", kind, where, want)
				}
			}
		})
	}
}

// checkRestartCounts: three connections, each ended by its token under
// its own disconnect reason, the first two restarted, each restart timed
// under "negotiate restart".
func checkRestartCounts(t *testing.T, st *Stats, r *rec) {
	t.Helper()
	const ends = 1 + jsRestarts
	refusals := st.TokenRefusals.Load()
	if n := st.Disconnects[ws.TokenRefused].Load(); refusals != ends || n != ends {
		t.Errorf("token refusals %d, token_refused disconnects %d, resets %d: want %d of each", refusals, n, st.Disconnects[ws.NetworkReset].Load(), ends)
	}
	first, restart, redirect := r.classes("negotiate"), r.classes("negotiate restart"), r.classes("negotiate redirect")
	if len(first) != 1 || len(restart) != jsRestarts || len(redirect) != ends {
		t.Errorf("negotiate %v, negotiate restart %v, negotiate redirect %v (token refusals %d)", first, restart, redirect, refusals)
	}
	for _, cl := range append(append(first, restart...), redirect...) {
		if cl != sample.OK {
			t.Errorf("a negotiate %s", cl)
		}
	}
}

// TestTokenKeptForConnection: a long-polling connection through the
// imitation, with a token that lives an hour, makes many requests; all
// carry the first token, and nothing negotiates again.
func TestTokenKeptForConnection(t *testing.T) {
	noLeak(t, nil)
	a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 50 * time.Millisecond}, Record: true}
	a.Start()
	t.Cleanup(a.Close)
	o := testOptions()
	o.Transport = LongPolling
	ctx := ctx5(t)
	c, err := Connect(ctx, a.AppURL(), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if res, err := c.Invoke(ctx, "Add", i, 1); err != nil || string(res) != fmt.Sprint(i+1) {
			t.Fatalf("add: %s %v", res, err)
		}
	}
	c.Close()
	story := tokenStory(t, a.Requests())
	if fmt.Sprint(story) != "[app negotiate service negotiate with token 1 -> 200]" || a.Issued.Load() != 1 {
		t.Errorf("story %q, tokens issued %d", story, a.Issued.Load())
	}
}

// TestTokenRefusedOnSend: the service refuses the token of a send; the
// connection ends at once as a token refusal, with the cause named, and
// no negotiate is sent for a new token. Whether the service keeps the
// event stream open (as ASP.NET Core does) or ends it before its 401
// (the client then reads the stream's end first), the end is the
// refusal, so the restart is counted as one.
func TestTokenRefusedOnSend(t *testing.T) {
	for _, endStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream ended first %v", endStream), func(t *testing.T) {
			noLeak(t, nil)
			// Uses: negotiate, the stream's GET, the handshake, one Add.
			a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"ServerSentEvents"}}, TokenUses: 4, EndStreamOnRefusal: endStream}
			a.Start()
			t.Cleanup(a.Close)
			o := testOptions()
			o.Transport = ServerSentEvents
			ctx := ctx5(t)
			c, err := Connect(ctx, a.AppURL(), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if res, err := c.Invoke(ctx, "Add", 1, 2); err != nil || string(res) != "3" {
				t.Fatalf("add: %s %v", res, err)
			}
			if _, err := c.Invoke(ctx, "Add", 2, 2); err == nil {
				t.Fatal("an Add with a refused token succeeded")
			}
			<-c.Done()
			d := c.Disconnect()
			if a.Issued.Load() != 1 || a.Refused.Load() != 1 || d == nil {
				t.Fatalf("tokens issued %d, refused %d, end %v", a.Issued.Load(), a.Refused.Load(), d)
			}
			st := o.Stats
			if !tokenRefused(d) || d.Reason != ws.TokenRefused || d.Class != sample.FromStatus(http.StatusUnauthorized) ||
				!strings.Contains(d.Error(), "refused the access token") || st.TokenRefusals.Load() != 1 || st.Disconnects[ws.TokenRefused].Load() != 1 {
				t.Errorf("end %q, refusals %d, token_refused %d", d.Error(), st.TokenRefusals.Load(), st.Disconnects[ws.TokenRefused].Load())
			}
		})
	}
}

// revocable is an app server handing out tokens the service accepts until
// revoked, for a stateful reconnect through a CutProxy.
type revocable struct {
	issued, revokeUpTo atomic.Int64
}

func (rv *revocable) token() string {
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"n": rv.issued.Add(1)})
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."
}

func (rv *revocable) valid(tok string) bool {
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[min(1, len(parts)-1)])
	var c struct{ N int64 }
	return err == nil && json.Unmarshal(b, &c) == nil && c.N > rv.revokeUpTo.Load()
}

// TestStatefulReconnectTokenRefused: the socket is cut after the service
// stopped accepting the connection's token; the reconnect's dial is
// refused with 401 and, the same token being all the connection has, it
// is not dialled again: the connection ends at once with the token
// refusal as its cause, without waiting out the reconnect window (an
// hour, so a client that keeps dialling trips the safety net).
func TestStatefulReconnectTokenRefused(t *testing.T) {
	noLeak(t, nil)
	rv := &revocable{}
	h := &sigtest.Hub{Transports: []string{"WebSockets"}, StatefulReconnect: true, TokenValid: rv.valid}
	svc := httptest.NewServer(h)
	p := sigtest.NewCutProxy(t, svc.Listener.Addr().String())
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"url":%q,"accessToken":%q}`, "http://"+p.Addr()+"/client/?hub=kitchen", rv.token())
	}))
	t.Cleanup(func() {
		h.Close()
		svc.CloseClientConnections()
		svc.Close()
		app.Close()
	})
	o := statefulOptions(JSON)
	o.ReconnectWindow = time.Hour
	c, err := Connect(ctx5(t), app.URL+"/app", nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.sf == nil {
		t.Fatal("stateful reconnect not granted")
	}
	rv.revokeUpTo.Store(rv.issued.Load())
	p.Cut()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the connection still dials with a refused token")
	}
	st := o.Stats
	if d := c.Disconnect(); !tokenRefused(d) || d.Reason != ws.TokenRefused || st.TokenRefusals.Load() != 1 || rv.issued.Load() != 1 || h.Unauthorized.Load() != 1 || st.ReconnectFailures.Load() != 1 {
		t.Errorf("end %v; refusals %d, tokens issued %d, 401s %d, reconnect failures %d", d, st.TokenRefusals.Load(), rv.issued.Load(),
			h.Unauthorized.Load(), st.ReconnectFailures.Load())
	}
}

// TestNegotiateHopsTimedApart: a redirect's hop fails (the service over
// its quota); the app's negotiate is counted a success under "negotiate"
// and the failure is the redirect's, with the service's answer and its
// Retry-After.
func TestNegotiateHopsTimedApart(t *testing.T) {
	a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"LongPolling"}, PollHold: 50 * time.Millisecond}, Quota: 1}
	a.Start()
	t.Cleanup(a.Close)
	o := testOptions()
	o.Transport = LongPolling
	r := &rec{}
	o.Recorder = r
	ctx := ctx5(t)
	c, err := Connect(ctx, a.AppURL(), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = Connect(ctx, a.AppURL(), nil, o)
	var e *Error
	if !errors.As(err, &e) || e.Phase != "negotiate redirect" || e.Class != sample.FromStatus(http.StatusTooManyRequests) || !strings.Contains(e.Msg, sigtest.OverQuotaBody) {
		t.Fatalf("over quota: %v", err)
	}
	if got := r.classes("negotiate"); len(got) != 2 || got[0] != sample.OK || got[1] != sample.OK {
		t.Errorf("negotiate %v", got)
	}
	if got := r.classes("negotiate redirect"); len(got) != 2 || got[0] != sample.OK || got[1] != e.Class {
		t.Errorf("negotiate redirect %v", got)
	}
	if a.OverQuota.Load() != 1 || a.Admitted.Load() != 1 {
		t.Errorf("over quota %d, admitted %d", a.OverQuota.Load(), a.Admitted.Load())
	}
	if ra, ok := RetryAfter(err); !ok || ra != time.Second {
		t.Errorf("Retry-After %v %v", ra, ok)
	}
}

// TestEventStreamEndsAtTokenExpiry: the service ends an event stream when
// its token expires (one to two seconds here: exp is in whole seconds); the connection ends as a reset,
// having negotiated once, and the client asked for no other token.
func TestEventStreamEndsAtTokenExpiry(t *testing.T) {
	noLeak(t, nil)
	a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"ServerSentEvents"}}, TokenLife: 2 * time.Second}
	a.Start()
	t.Cleanup(a.Close)
	o := testOptions()
	o.Transport = ServerSentEvents
	c, err := Connect(ctx5(t), a.AppURL(), nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the event stream outlived its token")
	}
	if d := c.Disconnect(); d.Reason != ws.NetworkReset || a.Issued.Load() != 1 || a.Refused.Load() != 0 {
		t.Errorf("end %v; tokens issued %d, requests refused %d", d, a.Issued.Load(), a.Refused.Load())
	}
}

// TestWebSocketTokenPlace: the WebSocket's token goes in the upgrade's
// Authorization header (the .NET client, the JavaScript client in Node),
// or with WebSocketTokenInQuery in the URL's access_token query (a
// browser), never both; negotiate carries it in its header either way.
func TestWebSocketTokenPlace(t *testing.T) {
	for _, inQuery := range []bool{false, true} {
		t.Run(fmt.Sprintf("in query %v", inQuery), func(t *testing.T) {
			a := &sigtest.Azure{Hub: &sigtest.Hub{Transports: []string{"WebSockets"}}, Record: true}
			a.Start()
			t.Cleanup(a.Close)
			o := testOptions()
			o.WebSocketTokenInQuery = inQuery
			ctx := ctx5(t)
			c, err := Connect(ctx, a.AppURL(), nil, o)
			if err != nil {
				t.Fatal(err)
			}
			if res, err := c.Invoke(ctx, "Add", 1, 2); err != nil || string(res) != "3" {
				t.Fatalf("add: %s %v", res, err)
			}
			c.Close()
			want := map[string]string{"POST negotiate": "header", "GET": "header"}
			if inQuery {
				want["GET"] = "query"
			}
			if got := tokenPlaces(t, a.Requests()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("token places %v, want %v:\n%s", got, want, strings.Join(a.Requests(), "\n"))
			}
		})
	}
}
