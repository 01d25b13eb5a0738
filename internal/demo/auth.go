package demo

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The auth routes give plans a login to model: tokens that expire, a
// signed request, and fixtures to create before a test and delete after.
//
//	POST   /auth/login            {"user": "u1"} → {"token": "..."}; ?ttl=2s
//	                              makes every token expire after that
//	                              time, ?uses=N makes the user's first
//	                              token expire after N requests (later
//	                              logins get tokens that do not), so a test
//	                              sees exactly one renewal per user
//	GET    /auth/items            → {"ids": ["a1", "a2", "a3"]}   (token)
//	GET    /auth/items/{id}       → {"id": "a1"}                  (token)
//	POST   /auth/signed           X-Signature: hex HMAC-SHA256 of the body
//	                              with key AuthSigningKey → 200, else 403
//	POST   /auth/fixtures         → 201 {"id": "f1"}
//	DELETE /auth/fixtures/{id}    → 204, 404 when there is none
//	GET    /auth/stats            → the counts below, as JSON
//
// A request with a missing, unknown or expired token gets 401.
const AuthPrefix = "/auth/"

// AuthSigningKey is the key /auth/signed checks signatures with.
const AuthSigningKey = "stampede-demo-key"

// AuthItems are the ids GET /auth/items lists.
var AuthItems = []string{"a1", "a2", "a3"}

// AuthStats counts what the auth routes saw.
type AuthStats struct {
	// Logins counts logins by user.
	Logins map[string]int64 `json:"logins"`
	// Unauthorized counts 401 answers (expired or unknown tokens).
	Unauthorized int64            `json:"unauthorized"`
	Requests     map[string]int64 `json:"requests"` // authorized requests by route
	SignedOK     int64            `json:"signed_ok"`
	SignedBad    int64            `json:"signed_bad"`
	Fixtures     int64            `json:"fixtures"` // live fixtures
	Created      int64            `json:"created"`
	Deleted      int64            `json:"deleted"`
}

type authToken struct {
	user    string
	expires time.Time // zero: never
	uses    int64     // requests left; -1: unlimited
}

type authState struct {
	mu       sync.Mutex
	tokens   map[string]*authToken
	fixtures map[string]bool
	nextFix  int64
	stats    AuthStats
}

// authStates keeps each server's auth state beside it, so the auth routes
// need no field of their own in Server.
var authStates sync.Map // *Server → *authState

func (s *Server) authState() *authState {
	if v, ok := authStates.Load(s); ok {
		return v.(*authState)
	}
	v, _ := authStates.LoadOrStore(s, &authState{
		tokens:   map[string]*authToken{},
		fixtures: map[string]bool{},
		stats:    AuthStats{Logins: map[string]int64{}, Requests: map[string]int64{}},
	})
	return v.(*authState)
}

// maxAuthBody bounds what the auth routes read of a body.
const maxAuthBody = 1 << 20

func (s *Server) auth(w http.ResponseWriter, r *http.Request) {
	s.total.Add(1)
	a := s.authState()
	p := strings.TrimPrefix(r.URL.Path, "/auth")
	switch {
	case p == "/login" && r.Method == http.MethodPost:
		a.login(s, w, r)
	case p == "/stats" && r.Method == http.MethodGet:
		a.mu.Lock()
		b, _ := json.Marshal(a.stats)
		a.mu.Unlock()
		s.reply(w, http.StatusOK, append(b, '\n'))
	case p == "/signed" && r.Method == http.MethodPost:
		a.signed(s, w, r)
	case p == "/fixtures" && r.Method == http.MethodPost:
		a.mu.Lock()
		a.nextFix++
		id := "f" + strconv.FormatInt(a.nextFix, 10)
		a.fixtures[id] = true
		a.stats.Created++
		a.stats.Fixtures = int64(len(a.fixtures))
		a.mu.Unlock()
		s.reply(w, http.StatusCreated, []byte(`{"id":"`+id+`"}`+"\n"))
	case strings.HasPrefix(p, "/fixtures/") && r.Method == http.MethodDelete:
		id := strings.TrimPrefix(p, "/fixtures/")
		a.mu.Lock()
		ok := a.fixtures[id]
		delete(a.fixtures, id)
		if ok {
			a.stats.Deleted++
		}
		a.stats.Fixtures = int64(len(a.fixtures))
		a.mu.Unlock()
		if !ok {
			s.reply(w, http.StatusNotFound, errNotFound)
			return
		}
		s.count(http.StatusNoContent)
		w.WriteHeader(http.StatusNoContent)
	case p == "/items" && r.Method == http.MethodGet:
		if a.authorize(s, w, r, "GET /auth/items") {
			b, _ := json.Marshal(map[string]any{"ids": AuthItems})
			s.reply(w, http.StatusOK, append(b, '\n'))
		}
	case strings.HasPrefix(p, "/items/") && r.Method == http.MethodGet:
		id := strings.TrimPrefix(p, "/items/")
		if a.authorize(s, w, r, "GET /auth/items/{id}") {
			b, _ := json.Marshal(map[string]string{"id": id})
			s.reply(w, http.StatusOK, append(b, '\n'))
		}
	default:
		s.reply(w, http.StatusNotFound, errNotFound)
	}
}

func (a *authState) login(s *Server, w http.ResponseWriter, r *http.Request) {
	var in struct {
		User string `json:"user"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxAuthBody))
	if json.Unmarshal(body, &in) != nil || in.User == "" {
		s.reply(w, http.StatusBadRequest, []byte(`{"error":"expected {\"user\": \"NAME\"}"}`+"\n"))
		return
	}
	q := r.URL.Query()
	t := &authToken{user: in.User, uses: -1}
	if d, err := time.ParseDuration(q.Get("ttl")); err == nil && d > 0 {
		t.expires = time.Now().Add(d)
	}
	var raw [16]byte
	rand.Read(raw[:])
	tok := hex.EncodeToString(raw[:])
	a.mu.Lock()
	if n, err := strconv.ParseInt(q.Get("uses"), 10, 64); err == nil && n > 0 && a.stats.Logins[in.User] == 0 {
		t.uses = n
	}
	a.stats.Logins[in.User]++
	a.tokens[tok] = t
	a.mu.Unlock()
	s.reply(w, http.StatusOK, []byte(`{"token":"`+tok+`"}`+"\n"))
}

// authorize checks the bearer token and spends one of its uses; it answers
// 401 itself when the token does not pass.
func (a *authState) authorize(s *Server, w http.ResponseWriter, r *http.Request, route string) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	t := a.tokens[tok]
	valid := ok && t != nil && (t.expires.IsZero() || time.Now().Before(t.expires)) && t.uses != 0
	if valid {
		if t.uses > 0 {
			t.uses--
		}
		a.stats.Requests[route]++
	} else {
		a.stats.Unauthorized++
	}
	a.mu.Unlock()
	if !valid {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		s.reply(w, http.StatusUnauthorized, []byte(`{"error":"token missing, unknown or expired"}`+"\n"))
	}
	return valid
}

func (a *authState) signed(s *Server, w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxAuthBody))
	m := hmac.New(sha256.New, []byte(AuthSigningKey))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	got := r.Header.Get("X-Signature")
	ok := hmac.Equal([]byte(want), []byte(strings.ToLower(got)))
	a.mu.Lock()
	if ok {
		a.stats.SignedOK++
	} else {
		a.stats.SignedBad++
	}
	a.mu.Unlock()
	if !ok {
		s.reply(w, http.StatusForbidden, []byte(`{"error":"bad signature"}`+"\n"))
		return
	}
	s.reply(w, http.StatusOK, []byte(`{"ok":true}`+"\n"))
}

// AuthStatsOf returns a copy of what s's auth routes counted.
func (s *Server) AuthStatsOf() AuthStats {
	a := s.authState()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.stats
	out.Logins = map[string]int64{}
	for k, v := range a.stats.Logins {
		out.Logins[k] = v
	}
	out.Requests = map[string]int64{}
	for k, v := range a.stats.Requests {
		out.Requests[k] = v
	}
	return out
}
