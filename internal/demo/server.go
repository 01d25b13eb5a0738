// Package demo is the built-in target service behind `stampede demo` and
// `target: demo`, so a newcomer can try the tool with nothing installed.
//
// It models an election system: clients GET the parties of an election, then
// POST a vote identified by voter-id and election-district-id headers (which
// a plan typically feeds from a CSV). Every data route goes through a
// simulated database connection pool, so under load the service queues,
// slows down and finally answers 503 the way real systems do, instead of
// staying unrealistically fast.
package demo

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Route names used as keys of Stats.Requests.
const (
	RouteHealthz = "GET /healthz"
	RouteParties = "GET /elections/{id}/parties"
	RouteVote    = "POST /votes"
	RouteCount   = "GET /votes/{district}/count"
	RouteStats   = "GET /__stats"
	RouteOther   = "other"
)

// StatusClientClosed is answered (and counted) when the client gave up while
// waiting for a pool connection. Nobody reads it, but it keeps those requests
// apart from real pool timeouts in Stats; 499 is the nginx convention.
const StatusClientClosed = 499

type route uint8

const (
	rHealthz route = iota
	rParties
	rVote
	rCount
	rStats
	rOther
	numRoutes
)

var routeNames = [numRoutes]string{RouteHealthz, RouteParties, RouteVote, RouteCount, RouteStats, RouteOther}

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Total is the number of requests received, on any route.
	Total uint64 `json:"total"`
	// Requests counts requests by route (the Route* constants).
	Requests map[string]uint64 `json:"requests"`
	// Status counts responses by HTTP status code.
	Status map[int]uint64 `json:"status"`
	// PoolWaits counts queries that found every pool connection busy and had to queue.
	PoolWaits uint64 `json:"pool_waits"`
	// PoolTimeouts counts queries that gave up after DBWaitTimeout (answered 503).
	PoolTimeouts uint64 `json:"pool_timeouts"`
	// PoolCancels counts queries abandoned because the client went away while queued.
	PoolCancels uint64 `json:"pool_cancels"`
	// MaxPoolInUse is the highest number of pool connections held at once.
	MaxPoolInUse int64 `json:"max_pool_in_use"`
	// RateLimited counts 429 answers from the rate limiter.
	RateLimited uint64 `json:"rate_limited"`
	// InjectedErrors counts 500 answers from ErrorRate.
	InjectedErrors uint64 `json:"injected_errors"`
	// VotesStored counts accepted votes (201).
	VotesStored uint64 `json:"votes_stored"`
	// Kitchen is the restaurant side (hub.go), once it has been used.
	Kitchen *HubStats `json:"kitchen,omitempty"`
}

// Server is the demo service. Create it with New; it is safe for concurrent use.
type Server struct {
	opts Options
	// every is the ErrorRate period: request n fails when n%every == 0; 0 disables.
	every uint64
	// now is swappable so rate-limit tests don't depend on wall-clock speed
	// (the race detector makes loops slow enough to refill tokens).
	now func() time.Time

	pool       chan struct{}
	inUse      atomic.Int64
	maxInUse   atomic.Int64
	poolWaits  atomic.Uint64
	poolTOs    atomic.Uint64
	poolCancel atomic.Uint64

	limMu     sync.Mutex
	limTokens float64
	limLast   time.Time

	errSeq    atomic.Uint64
	injected  atomic.Uint64
	limited   atomic.Uint64
	total     atomic.Uint64
	byRoute   [numRoutes]atomic.Uint64
	byStatus  [600]atomic.Uint64
	voteSeq   atomic.Uint64
	votes     sync.Map // voter-id -> vote id; sync.Map suits write-once keys spread over many goroutines
	districts sync.Map // district -> *atomic.Uint64
	stored    atomic.Uint64

	// db, when set (Open with Options.DB), serves the data routes from
	// PostgreSQL instead of the simulated pool and the maps above.
	db *pgStore

	// The restaurant side: kitchen hub and orders (hub.go, orders.go).
	kitOnce   sync.Once
	kitMu     sync.Mutex
	kit       *kitchen
	kitErr    error
	kitClosed bool
}

// New returns a Server for opts, with zero fields set to their defaults.
func New(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts: opts,
		now:  time.Now,
		pool: make(chan struct{}, opts.DBPool),
	}
	if opts.ErrorRate > 0 {
		p := math.Round(1 / opts.ErrorRate)
		if p < 1 {
			p = 1
		}
		// A period beyond uint64 can never be reached; leave injection off
		// rather than overflow the conversion.
		if p < math.MaxUint64/2 {
			s.every = uint64(p)
		}
	}
	if opts.RateLimit > 0 {
		s.limTokens = burst(opts.RateLimit)
	}
	return s
}

// burst is at least one token, or a limit below 1/s could never admit anything.
func burst(rate float64) float64 { return max(rate, 1) }

// Options returns the effective options, defaults filled.
func (s *Server) Options() Options { return s.opts }

// Handler returns the service's routes. Routing is done by hand rather than
// with http.ServeMux so that 404/405 answers are counted like everything else.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.route) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.total.Add(1)
	rt, arg, allow := match(r.URL.Path)
	s.byRoute[rt].Add(1)
	switch {
	case rt == rOther:
		s.reply(w, http.StatusNotFound, errNotFound)
		return
	case r.Method != allow && !(allow == http.MethodGet && r.Method == http.MethodHead):
		w.Header().Set("Allow", allow)
		s.reply(w, http.StatusMethodNotAllowed, errMethod)
		return
	}
	switch rt {
	case rHealthz:
		s.count(http.StatusOK)
		h := w.Header()
		h["Content-Type"] = textCT
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(okBody)
		return
	case rStats:
		b, _ := json.Marshal(s.Stats())
		s.reply(w, http.StatusOK, append(b, '\n'))
		return
	}
	// Edge protections sit in front of the application, so they answer
	// before any validation or database work.
	if s.edgeRejects(w) {
		return
	}
	switch rt {
	case rParties:
		s.listParties(w, r, arg)
	case rVote:
		s.vote(w, r)
	case rCount:
		s.countVotes(w, r, arg)
	}
}

// match maps a path to its route, the path parameter, and the one method the
// route accepts.
func match(p string) (route, string, string) {
	switch p {
	case "/healthz":
		return rHealthz, "", http.MethodGet
	case "/votes":
		return rVote, "", http.MethodPost
	case "/__stats":
		return rStats, "", http.MethodGet
	}
	if rest, ok := strings.CutPrefix(p, "/elections/"); ok {
		if id, ok := strings.CutSuffix(rest, "/parties"); ok && id != "" && !strings.Contains(id, "/") {
			return rParties, id, http.MethodGet
		}
	}
	if rest, ok := strings.CutPrefix(p, "/votes/"); ok {
		if d, ok := strings.CutSuffix(rest, "/count"); ok && d != "" && !strings.Contains(d, "/") {
			return rCount, d, http.MethodGet
		}
	}
	return rOther, "", ""
}

func (s *Server) listParties(w http.ResponseWriter, r *http.Request, id string) {
	if s.db != nil {
		s.pgParties(w, r, id)
		return
	}
	if !s.query(w, r) {
		return
	}
	// One allocation: the fixed parts are prebuilt, only the id varies.
	b := make([]byte, 0, len(partiesPrefix)+len(id)+8+len(partiesSuffix))
	b = append(b, partiesPrefix...)
	b = appendJSONString(b, id)
	b = append(b, partiesSuffix...)
	s.reply(w, http.StatusOK, b)
}

// maxVoteBody bounds what a client can make us buffer; a real vote is ~20 bytes.
const maxVoteBody = 4 << 10

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *Server) vote(w http.ResponseWriter, r *http.Request) {
	voter := r.Header.Get("voter-id")
	if voter == "" {
		s.reply(w, http.StatusBadRequest, errNoVoter)
		return
	}
	district := r.Header.Get("election-district-id")
	if district == "" {
		s.reply(w, http.StatusBadRequest, errNoDistrict)
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r.Body, maxVoteBody+1))
	var body struct {
		PartyID string `json:"partyId"`
	}
	if err == nil && buf.Len() <= maxVoteBody {
		err = json.Unmarshal(buf.Bytes(), &body)
	} else if err == nil {
		err = io.ErrShortBuffer
	}
	bufPool.Put(buf)
	if err != nil {
		s.reply(w, http.StatusBadRequest, errBadBody)
		return
	}
	if !validParty(body.PartyID) {
		s.reply(w, http.StatusBadRequest, errBadParty)
		return
	}
	if s.db != nil {
		s.pgVote(w, r, voter, district, body.PartyID)
		return
	}
	// The uniqueness check needs the database, so a duplicate still costs a
	// query, as it would against a real unique index.
	if !s.query(w, r) {
		return
	}
	seq := s.voteSeq.Add(1)
	id := make([]byte, 0, 24)
	id = append(id, 'v')
	id = strconv.AppendUint(id, seq, 10)
	if _, dup := s.votes.LoadOrStore(voter, string(id)); dup {
		s.reply(w, http.StatusConflict, errDuplicate)
		return
	}
	s.districtCounter(district).Add(1)
	s.stored.Add(1)
	b := make([]byte, 0, len(voteRespPrefix)+len(id)+len(voteRespSuffix))
	b = append(b, voteRespPrefix...)
	b = append(b, id...)
	b = append(b, voteRespSuffix...)
	s.reply(w, http.StatusCreated, b)
}

func (s *Server) districtCounter(d string) *atomic.Uint64 {
	if c, ok := s.districts.Load(d); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := s.districts.LoadOrStore(d, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (s *Server) countVotes(w http.ResponseWriter, r *http.Request, district string) {
	if s.db != nil {
		s.pgCount(w, r, district)
		return
	}
	// Counting is a read against the same database, so it competes for the
	// pool like the other data routes.
	if !s.query(w, r) {
		return
	}
	var n uint64
	if c, ok := s.districts.Load(district); ok {
		n = c.(*atomic.Uint64).Load()
	}
	b := make([]byte, 0, 32+len(district))
	b = append(b, `{"district":`...)
	b = appendJSONString(b, district)
	b = append(b, `,"count":`...)
	b = strconv.AppendUint(b, n, 10)
	b = append(b, "}\n"...)
	s.reply(w, http.StatusOK, b)
}

// query runs one simulated database query. It reports false after it has
// already answered the request (pool timeout or client gone).
func (s *Server) query(w http.ResponseWriter, r *http.Request) bool {
	select {
	case s.pool <- struct{}{}:
	default:
		s.poolWaits.Add(1)
		t := time.NewTimer(s.opts.DBWaitTimeout)
		select {
		case s.pool <- struct{}{}:
			t.Stop()
		case <-t.C:
			s.poolTOs.Add(1)
			s.reply(w, http.StatusServiceUnavailable, errPoolTimeout)
			return false
		case <-r.Context().Done():
			t.Stop()
			s.poolCancel.Add(1)
			s.reply(w, StatusClientClosed, errCancelled)
			return false
		}
	}
	n := s.inUse.Add(1)
	for {
		m := s.maxInUse.Load()
		if n <= m || s.maxInUse.CompareAndSwap(m, n) {
			break
		}
	}
	d := s.opts.DBServiceTime
	if j := s.opts.DBJitter; j > 0 {
		d += time.Duration(rand.Int64N(int64(j) + 1))
	}
	// The hold ignores cancellation on purpose: a real database finishes a
	// query whose client has hung up, and keeps the connection meanwhile.
	time.Sleep(d)
	s.inUse.Add(-1)
	<-s.pool
	return true
}

// allow takes one token from the rate limiter's bucket.
func (s *Server) allow() bool {
	rate := s.opts.RateLimit
	if rate <= 0 {
		return true
	}
	now := s.now()
	s.limMu.Lock()
	defer s.limMu.Unlock()
	if s.limLast.IsZero() {
		// The clock starts at the first request rather than in New, so a
		// clock swapped in after New (tests) governs the bucket throughout.
		s.limLast = now
	}
	if el := now.Sub(s.limLast); el > 0 {
		s.limTokens = min(s.limTokens+el.Seconds()*rate, burst(rate))
		s.limLast = now
	}
	if s.limTokens < 1 {
		return false
	}
	s.limTokens--
	return true
}

// Stats returns a snapshot of the counters. Counters are read one by one, so
// under traffic they may be a few requests apart from each other.
func (s *Server) Stats() Stats {
	st := Stats{
		Total:          s.total.Load(),
		Requests:       make(map[string]uint64, numRoutes),
		Status:         make(map[int]uint64),
		PoolWaits:      s.poolWaits.Load(),
		PoolTimeouts:   s.poolTOs.Load(),
		PoolCancels:    s.poolCancel.Load(),
		MaxPoolInUse:   s.maxInUse.Load(),
		RateLimited:    s.limited.Load(),
		InjectedErrors: s.injected.Load(),
		VotesStored:    s.stored.Load(),
	}
	s.kitMu.Lock()
	if s.kit != nil {
		ks := s.kit.stats()
		st.Kitchen = &ks
	}
	s.kitMu.Unlock()
	for i := range s.byRoute {
		if n := s.byRoute[i].Load(); n > 0 {
			st.Requests[routeNames[i]] = n
		}
	}
	for code := range s.byStatus {
		if n := s.byStatus[code].Load(); n > 0 {
			st.Status[code] = n
		}
	}
	return st
}

func (s *Server) count(code int) {
	if code >= 0 && code < len(s.byStatus) {
		s.byStatus[code].Add(1)
	}
}

func (s *Server) reply(w http.ResponseWriter, code int, body []byte) {
	s.count(code)
	// Assigning the shared slice avoids Header.Set's canonicalisation and
	// allocation on every response; net/http only reads it.
	w.Header()["Content-Type"] = jsonCT
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

var (
	jsonCT = []string{"application/json"}
	textCT = []string{"text/plain; charset=utf-8"}
	okBody = []byte("ok")

	errNotFound    = []byte(`{"error":"not found"}` + "\n")
	errMethod      = []byte(`{"error":"method not allowed"}` + "\n")
	errRateLimited = []byte(`{"error":"rate limit exceeded"}` + "\n")
	errInjected    = []byte(`{"error":"internal server error (injected)"}` + "\n")
	errPoolTimeout = []byte(`{"error":"db pool timeout"}` + "\n")
	errCancelled   = []byte(`{"error":"request cancelled"}` + "\n")
	errNoVoter     = []byte(`{"error":"missing header voter-id"}` + "\n")
	errNoDistrict  = []byte(`{"error":"missing header election-district-id"}` + "\n")
	errBadBody     = []byte(`{"error":"body must be JSON like {\"partyId\":\"p1\"}"}` + "\n")
	errBadParty    = []byte(`{"error":"unknown party"}` + "\n")
	errDuplicate   = []byte(`{"error":"voter has already voted"}` + "\n")

	voteRespPrefix = []byte(`{"vote_id":"`)
	voteRespSuffix = []byte(`","status":"counted"}` + "\n")
)

// party is one entry of the parties list.
type party struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// parties is the fixed ballot every election offers; ids are p1..p5.
var parties = []party{
	{ID: "p1", Name: "Progressive Alliance"},
	{ID: "p2", Name: "Conservative Union"},
	{ID: "p3", Name: "Green Future"},
	{ID: "p4", Name: "Liberal Democrats"},
	{ID: "p5", Name: "Independent Coalition"},
}

// The parties response is the same for every election but for the id, so
// everything around the id is built once.
var partiesPrefix, partiesSuffix = func() ([]byte, []byte) {
	list, err := json.Marshal(parties)
	if err != nil {
		panic(err)
	}
	suffix := append([]byte(`,"parties":`), list...)
	suffix = append(suffix, "}\n"...)
	return []byte(`{"election":`), suffix
}()

func validParty(id string) bool {
	for _, p := range parties {
		if p.ID == id {
			return true
		}
	}
	return false
}

// appendJSONString quotes s as a JSON string. strconv.Quote is not JSON (it
// writes \x00 and \U escapes), and encoding/json would allocate per call.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// edgeRejects answers the request itself when the rate limiter or the
// injected-error schedule turns it away. These stand in front of the
// application, so every route calls it before any validation or database work.
func (s *Server) edgeRejects(w http.ResponseWriter) bool {
	if !s.allow() {
		s.limited.Add(1)
		s.reply(w, http.StatusTooManyRequests, errRateLimited)
		return true
	}
	if s.every > 0 && s.errSeq.Add(1)%s.every == 0 {
		s.injected.Add(1)
		s.reply(w, http.StatusInternalServerError, errInjected)
		return true
	}
	return false
}
