package sigtest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// OverQuotaBody is what Azure SignalR Service answers, with 429, to a
// negotiate above a unit's connection quota.
const OverQuotaBody = "Connection count reaches limit."

// Azure imitates Azure SignalR Service's connection flow on loopback: an
// app server whose POST {hub}/negotiate answers {url, accessToken} (the
// redirect the ASP.NET Core SDK for the service gives), and the service:
// Hub behind a check of the bearer token of every request (an HS256 JWT
// the app signed with the service's key: the signature, then exp, then
// how many requests it has carried) and a connection quota, above which
// its negotiate is answered 429 with Retry-After and OverQuotaBody. A
// connection whose token is refused leaves the quota at once (Hub.detach
// says how the client learns of it).
type Azure struct {
	Hub *Hub
	// TokenLife is how long a token is valid (default an hour).
	TokenLife time.Duration
	// TokenUses, above 0, is how many service requests one token is
	// accepted for; later ones get 401: expiry that no clock decides.
	// LimitedTokens, above 0, limits only the first tokens issued, so
	// a test's restarts end early and what follows holds.
	TokenUses     int
	LimitedTokens int64
	// Quota, above 0, is how many connections the service holds at once.
	Quota int
	// RetryAfter is a 429's Retry-After, in whole seconds (default 1 s).
	RetryAfter time.Duration
	// Record keeps every request's Line (Requests returns them).
	Record bool
	// EndStreamOnRefusal ends a connection's event stream before its
	// refused request is answered 401 (ASP.NET Core keeps the stream
	// open): the client sees the stream end first and must still count
	// the end as the refusal.
	EndStreamOnRefusal bool

	App, Service *httptest.Server

	Issued    atomic.Int64 // tokens issued: app negotiates answered
	Admitted  atomic.Int64 // service negotiates answered with a connection
	OverQuota atomic.Int64 // service negotiates answered 429
	Refused   atomic.Int64 // service requests answered 401

	key []byte

	mu    sync.Mutex
	uses  map[string]int    // requests carried, by token
	names map[string]string // "token N", "conn N": stable names for Lines
	limit map[string]bool   // tokens TokenUses applies to
	conns int
	lines []string
}

// Start serves the app server and the service; hubPath is the hub's path
// at the app (/hubs/kitchen), the URL a client is given is AppURL.
func (a *Azure) Start() {
	a.key = make([]byte, 32)
	_, _ = rand.Read(a.key)
	a.uses, a.names, a.limit = map[string]int{}, map[string]string{}, map[string]bool{}
	a.Hub.TokenValid = nil // the service checks tokens itself
	a.Service = httptest.NewServer(http.HandlerFunc(a.serveService))
	a.App = httptest.NewServer(http.HandlerFunc(a.serveApp))
}

// AppURL is the hub's URL at the app server.
func (a *Azure) AppURL() string { return a.App.URL + "/hubs/kitchen" }

// Close stops both servers and ends the hub's connections.
func (a *Azure) Close() {
	a.Hub.Close()
	a.App.CloseClientConnections()
	a.Service.CloseClientConnections()
	a.App.Close()
	a.Service.Close()
}

// Requests are the Lines of the requests so far, in arrival order.
func (a *Azure) Requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lines...)
}

func (a *Azure) serveApp(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/negotiate") {
		a.record("app", r, http.StatusNotFound)
		http.NotFound(w, r)
		return
	}
	tok := a.issue()
	a.record("app", r, http.StatusOK)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"url": a.Service.URL + "/client/?hub=kitchen", "accessToken": tok})
}

// issue signs a token numbered by issue order.
func (a *Azure) issue() string {
	n := a.Issued.Add(1)
	life := a.TokenLife
	if life <= 0 {
		life = time.Hour
	}
	enc := base64.RawURLEncoding.EncodeToString
	claims, _ := json.Marshal(map[string]any{"aud": a.Service.URL + "/client/?hub=kitchen", "exp": time.Now().Add(life).Unix(), "jti": n})
	signed := enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc(claims)
	tok := signed + "." + enc(a.sign(signed))
	a.mu.Lock()
	a.names[tok] = "token " + strconv.FormatInt(n, 10)
	a.limit[tok] = a.TokenUses > 0 && (a.LimitedTokens <= 0 || n <= a.LimitedTokens)
	a.mu.Unlock()
	return tok
}

func (a *Azure) sign(s string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// check says why the service refuses tok, or "" when it accepts it (and
// counts the use); exp is when tok expires.
func (a *Azure) check(tok string) (why string, exp time.Time) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "no bearer token", exp
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, a.sign(parts[0]+"."+parts[1])) {
		return "bad signature", exp
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct{ Exp int64 }
	if err != nil || json.Unmarshal(b, &c) != nil || time.Now().Unix() >= c.Exp {
		return "token expired", exp
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limit[tok] && a.uses[tok] >= a.TokenUses {
		return "token expired", exp
	}
	a.uses[tok]++
	return "", time.Unix(c.Exp, 0)
}

func (a *Azure) serveService(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.URL.Query().Get("access_token")
	}
	why, exp := a.check(tok)
	if why != "" {
		a.Refused.Add(1)
		a.record("service", r, http.StatusUnauthorized)
		if id := r.URL.Query().Get("id"); id != "" {
			a.Hub.detach(id, a.EndStreamOnRefusal)
		}
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/negotiate") {
		if a.Quota > 0 && a.Hub.Open() >= a.Quota {
			a.OverQuota.Add(1)
			a.record("service", r, http.StatusTooManyRequests)
			ra := a.RetryAfter
			if ra <= 0 {
				ra = time.Second
			}
			w.Header().Set("Retry-After", strconv.Itoa(int((ra+time.Second-1)/time.Second)))
			http.Error(w, OverQuotaBody, http.StatusTooManyRequests)
			return
		}
		a.Admitted.Add(1)
	}
	a.record("service", r, http.StatusOK)
	if r.Method == http.MethodGet && r.Header.Get("Accept") == "text/event-stream" {
		// The event stream ends when its token expires: the request
		// that carried it is the stream's only one.
		ctx, cancel := context.WithDeadline(r.Context(), exp)
		defer cancel()
		r = r.WithContext(ctx)
	}
	a.Hub.ServeHTTP(w, r)
}

// record keeps a request's Line when Record is set: server, method,
// path, the query with its varying values named (the connection token as
// "conn N", the JavaScript client's cache-buster "_" as "T"), which token
// it carried, and the status the check gave (200 when it passed on to
// the hub).
func (a *Azure) record(server string, r *http.Request, status int) {
	if !a.Record {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		if _, ok := a.names[id]; !ok {
			a.conns++
			a.names[id] = "conn " + strconv.Itoa(a.conns)
		}
		q.Set("id", a.names[id])
	}
	if q.Has("_") {
		q.Set("_", "T")
	}
	if t := q.Get("access_token"); t != "" {
		q.Set("access_token", a.nameOf(t))
	}
	auth := "none"
	if h := r.Header.Get("Authorization"); h != "" {
		auth = a.nameOf(strings.TrimPrefix(h, "Bearer "))
	}
	kind := r.Method
	if r.Method == http.MethodGet && r.Header.Get("Accept") == "text/event-stream" {
		kind = "GET(sse)"
	}
	a.lines = append(a.lines, fmt.Sprintf("%s %s %s?%s auth=%s -> %d", server, kind, r.URL.Path, q.Encode(), auth, status))
}

// nameOf is a token's name in Lines; "unknown" for one not issued here.
func (a *Azure) nameOf(tok string) string {
	if n, ok := a.names[tok]; ok {
		return n
	}
	return "unknown"
}
