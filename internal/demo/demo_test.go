package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fast keeps the simulated DB out of the way of tests that aren't about it.
var fast = Options{DBServiceTime: time.Microsecond}

type resp struct {
	code int
	body string
	ct   string
}

// do drives the handler in-process: no sockets, so results don't depend on
// the machine's network or load.
func do(t *testing.T, s *Server, method, path string, hdr map[string]string, body string) resp {
	t.Helper()
	return doCtx(t, context.Background(), s, method, path, hdr, body)
}

func doCtx(t *testing.T, ctx context.Context, s *Server, method, path string, hdr map[string]string, body string) resp {
	t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rb)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return resp{rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")}
}

func voteHdr(voter, district string) map[string]string {
	return map[string]string{"voter-id": voter, "election-district-id": district}
}

func TestHealthz(t *testing.T) {
	s := New(fast)
	r := do(t, s, "GET", "/healthz", nil, "")
	if r.code != 200 || r.body != "ok" {
		t.Fatalf("healthz = %d %q", r.code, r.body)
	}
	st := s.Stats()
	if st.MaxPoolInUse != 0 || st.Requests[RouteHealthz] != 1 || st.Status[200] != 1 {
		t.Fatalf("healthz touched the DB or wasn't counted: %+v", st)
	}
}

func TestParties(t *testing.T) {
	s := New(fast)
	r := do(t, s, "GET", "/elections/e-2024/parties", nil, "")
	if r.code != 200 || r.ct != "application/json" {
		t.Fatalf("parties = %d %q", r.code, r.ct)
	}
	var got struct {
		Election string `json:"election"`
		Parties  []struct{ ID, Name string }
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if got.Election != "e-2024" || len(got.Parties) != 5 || got.Parties[0].ID != "p1" || got.Parties[0].Name == "" {
		t.Fatalf("parties body = %+v", got)
	}
	if st := s.Stats(); st.MaxPoolInUse != 1 || st.Requests[RouteParties] != 1 {
		t.Fatalf("parties should run one DB query: %+v", st)
	}

	// An id needing escapes must still produce valid JSON that decodes back.
	odd := "a\"b\\c\x01d\xffé"
	r = do(t, s, "GET", "/elections/"+strings.ReplaceAll(urlEscape(odd), "/", "%2F")+"/parties", nil, "")
	if r.code != 200 || !json.Valid([]byte(r.body)) {
		t.Fatalf("escaped id: %d %q", r.code, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Election != "a\"b\\c\x01d\uFFFDé" {
		t.Fatalf("escaped id decoded to %q (%v)", got.Election, err)
	}
}

func urlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func TestVoteFlow(t *testing.T) {
	s := New(fast)
	r := do(t, s, "POST", "/votes", voteHdr("voter-1", "d7"), `{"partyId":"p3"}`)
	if r.code != 201 || r.ct != "application/json" {
		t.Fatalf("vote = %d %q", r.code, r.body)
	}
	var v struct{ VoteID, Status string }
	if err := json.Unmarshal([]byte(r.body), &struct {
		VoteID *string `json:"vote_id"`
		Status *string `json:"status"`
	}{&v.VoteID, &v.Status}); err != nil || v.VoteID == "" || v.Status != "counted" {
		t.Fatalf("vote body %q: %+v %v", r.body, v, err)
	}

	r = do(t, s, "POST", "/votes", voteHdr("voter-1", "d7"), `{"partyId":"p1"}`)
	if r.code != 409 {
		t.Fatalf("duplicate vote = %d %q, want 409", r.code, r.body)
	}
	r = do(t, s, "POST", "/votes", voteHdr("voter-2", "d7"), `{"partyId":"p5"}`)
	if r.code != 201 {
		t.Fatalf("second voter = %d %q", r.code, r.body)
	}

	r = do(t, s, "GET", "/votes/d7/count", nil, "")
	if r.code != 200 || r.body != `{"district":"d7","count":2}`+"\n" {
		t.Fatalf("count = %d %q", r.code, r.body)
	}
	r = do(t, s, "GET", "/votes/nowhere/count", nil, "")
	if r.code != 200 || r.body != `{"district":"nowhere","count":0}`+"\n" {
		t.Fatalf("empty count = %d %q", r.code, r.body)
	}

	st := s.Stats()
	if st.VotesStored != 2 || st.Status[201] != 2 || st.Status[409] != 1 || st.Requests[RouteVote] != 3 || st.Requests[RouteCount] != 2 {
		t.Fatalf("stats after votes: %+v", st)
	}
}

func TestVoteBadRequests(t *testing.T) {
	s := New(fast)
	cases := []struct {
		name string
		hdr  map[string]string
		body string
		want string
	}{
		{"no voter", map[string]string{"election-district-id": "d1"}, `{"partyId":"p1"}`, "voter-id"},
		{"no district", map[string]string{"voter-id": "v1"}, `{"partyId":"p1"}`, "election-district-id"},
		{"no body", voteHdr("v1", "d1"), "", "JSON"},
		{"bad json", voteHdr("v1", "d1"), `{"partyId":`, "JSON"},
		{"unknown party", voteHdr("v1", "d1"), `{"partyId":"p9"}`, "unknown party"},
		{"no party", voteHdr("v1", "d1"), `{}`, "unknown party"},
		{"huge body", voteHdr("v1", "d1"), `{"partyId":"p1","x":"` + strings.Repeat("a", maxVoteBody) + `"}`, "JSON"},
	}
	for _, c := range cases {
		r := do(t, s, "POST", "/votes", c.hdr, c.body)
		if r.code != 400 || !strings.Contains(r.body, c.want) || !json.Valid([]byte(r.body)) {
			t.Errorf("%s: %d %q, want 400 mentioning %q", c.name, r.code, r.body, c.want)
		}
	}
	st := s.Stats()
	if st.Status[400] != uint64(len(cases)) || st.VotesStored != 0 || st.MaxPoolInUse != 0 {
		t.Fatalf("bad requests must be rejected before the DB: %+v", st)
	}
	// The rejected attempts must not have used up voter v1.
	if r := do(t, s, "POST", "/votes", voteHdr("v1", "d1"), `{"partyId":"p1"}`); r.code != 201 {
		t.Fatalf("v1 after rejects = %d %q", r.code, r.body)
	}
}

func TestNotFoundAndMethod(t *testing.T) {
	s := New(fast)
	for _, p := range []string{"/", "/elections//parties", "/elections/a/b/parties", "/votes/x", "/nope"} {
		if r := do(t, s, "GET", p, nil, ""); r.code != 404 {
			t.Errorf("GET %s = %d, want 404", p, r.code)
		}
	}
	if r := do(t, s, "GET", "/votes", nil, ""); r.code != 405 {
		t.Errorf("GET /votes = %d, want 405", r.code)
	}
	if r := do(t, s, "POST", "/elections/e1/parties", nil, ""); r.code != 405 {
		t.Errorf("POST parties = %d, want 405", r.code)
	}
	st := s.Stats()
	if st.Requests[RouteOther] != 5 || st.Status[404] != 5 || st.Status[405] != 2 || st.Total != 7 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestStatsRoute(t *testing.T) {
	// A limit of 1/s with a frozen clock: the second data request is refused,
	// but /__stats and /healthz must keep answering.
	s := New(Options{DBServiceTime: time.Microsecond, RateLimit: 1, ErrorRate: 1})
	now := time.Now()
	s.now = func() time.Time { return now }
	do(t, s, "GET", "/elections/e1/parties", nil, "")
	do(t, s, "GET", "/elections/e1/parties", nil, "")
	for range 3 {
		if r := do(t, s, "GET", "/healthz", nil, ""); r.code != 200 {
			t.Fatalf("healthz under limits = %d", r.code)
		}
	}
	r := do(t, s, "GET", "/__stats", nil, "")
	if r.code != 200 || r.ct != "application/json" {
		t.Fatalf("__stats = %d %q", r.code, r.body)
	}
	var st Stats
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatalf("__stats body %q: %v", r.body, err)
	}
	if st.Status[429] != 1 || st.Status[500] != 1 || st.Status[200] != 3 || st.Requests[RouteStats] != 1 || st.MaxPoolInUse != 0 {
		t.Fatalf("__stats = %+v", st)
	}
}

func TestPoolSaturation(t *testing.T) {
	s := New(Options{DBPool: 1, DBServiceTime: 50 * time.Millisecond, DBWaitTimeout: 20 * time.Millisecond})
	const n = 3
	codes := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			codes[i] = do(t, s, "GET", "/elections/e1/parties", nil, "").code
		})
	}
	close(start)
	wg.Wait()
	var ok, busy int
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 503:
			busy++
		default:
			t.Fatalf("unexpected status %d in %v", c, codes)
		}
	}
	if busy < 1 || ok < 1 {
		t.Fatalf("codes %v: want at least one 200 and one 503", codes)
	}
	st := s.Stats()
	if st.PoolTimeouts != uint64(busy) || st.Status[503] != uint64(busy) || st.Status[200] != uint64(ok) {
		t.Fatalf("stats %+v don't match codes %v", st, codes)
	}
	if st.PoolWaits < uint64(busy) || st.MaxPoolInUse != 1 {
		t.Fatalf("pool stats %+v", st)
	}
	r := do(t, s, "GET", "/elections/e1/parties", nil, "")
	if r.code != 200 {
		t.Fatalf("pool didn't recover: %d", r.code)
	}
}

func TestPoolTimeoutBody(t *testing.T) {
	s := New(Options{DBPool: 1, DBServiceTime: 200 * time.Millisecond, DBWaitTimeout: time.Millisecond})
	held := make(chan struct{})
	go func() {
		defer close(held)
		do(t, s, "GET", "/elections/e1/parties", nil, "")
	}()
	waitFor(t, func() bool { return s.inUse.Load() == 1 })
	r := do(t, s, "GET", "/votes/d1/count", nil, "")
	if r.code != 503 || r.body != `{"error":"db pool timeout"}`+"\n" || r.ct != "application/json" {
		t.Fatalf("timeout = %d %q %q", r.code, r.body, r.ct)
	}
	<-held
}

func TestPoolWaitHonoursCancel(t *testing.T) {
	s := New(Options{DBPool: 1, DBServiceTime: 300 * time.Millisecond, DBWaitTimeout: 10 * time.Second})
	held := make(chan struct{})
	go func() {
		defer close(held)
		do(t, s, "GET", "/elections/e1/parties", nil, "")
	}()
	waitFor(t, func() bool { return s.inUse.Load() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	began := time.Now()
	r := doCtx(t, ctx, s, "GET", "/elections/e1/parties", nil, "")
	if r.code != StatusClientClosed || time.Since(began) > 250*time.Millisecond {
		t.Fatalf("cancelled wait = %d after %v", r.code, time.Since(began))
	}
	<-held
	if st := s.Stats(); st.PoolCancels != 1 || st.PoolTimeouts != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRateLimit(t *testing.T) {
	s := New(Options{DBServiceTime: time.Microsecond, RateLimit: 5})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	count := func(n int) (ok, limited int) {
		for range n {
			switch c := do(t, s, "GET", "/elections/e1/parties", nil, "").code; c {
			case 200:
				ok++
			case 429:
				limited++
			default:
				t.Fatalf("status %d", c)
			}
		}
		return
	}
	if ok, lim := count(20); ok != 5 || lim != 15 {
		t.Fatalf("burst: ok=%d limited=%d, want 5/15", ok, lim)
	}
	now = now.Add(400 * time.Millisecond) // refills 2 tokens
	if ok, lim := count(4); ok != 2 || lim != 2 {
		t.Fatalf("after 400ms: ok=%d limited=%d, want 2/2", ok, lim)
	}
	now = now.Add(time.Hour) // refill is capped at the burst
	if ok, lim := count(10); ok != 5 || lim != 5 {
		t.Fatalf("after idle: ok=%d limited=%d, want 5/5", ok, lim)
	}
	st := s.Stats()
	if st.RateLimited != 22 || st.Status[429] != 22 || st.Status[200] != 12 {
		t.Fatalf("stats %+v", st)
	}
	r := do(t, s, "GET", "/elections/e1/parties", nil, "")
	if r.code != 429 || !json.Valid([]byte(r.body)) {
		t.Fatalf("limited body %d %q", r.code, r.body)
	}
}

func TestRateLimitRealClock(t *testing.T) {
	// A sub-1/s limit must still admit a first request (burst is at least 1).
	s := New(Options{DBServiceTime: time.Microsecond, RateLimit: 0.5})
	if r := do(t, s, "GET", "/elections/e1/parties", nil, ""); r.code != 200 {
		t.Fatalf("first = %d", r.code)
	}
	if r := do(t, s, "GET", "/elections/e1/parties", nil, ""); r.code != 429 {
		t.Fatalf("second = %d", r.code)
	}
}

func TestErrorInjection(t *testing.T) {
	for _, tc := range []struct {
		rate   float64
		n      int
		period int
	}{{0.1, 100, 10}, {0.3, 10, 3}, {1, 7, 1}, {0.01, 250, 100}} {
		s := New(Options{DBServiceTime: time.Microsecond, ErrorRate: tc.rate})
		var failed []int
		for i := 1; i <= tc.n; i++ {
			r := do(t, s, "GET", "/elections/e1/parties", nil, "")
			if r.code == 500 {
				failed = append(failed, i)
			} else if r.code != 200 {
				t.Fatalf("rate %v: status %d", tc.rate, r.code)
			}
		}
		want := tc.n / tc.period
		if len(failed) != want {
			t.Fatalf("rate %v: %d failures %v, want %d", tc.rate, len(failed), failed, want)
		}
		for k, i := range failed {
			if i != (k+1)*tc.period {
				t.Fatalf("rate %v: failures at %v, want every %d-th", tc.rate, failed, tc.period)
			}
		}
		st := s.Stats()
		if st.InjectedErrors != uint64(want) || st.Status[500] != uint64(want) || st.Status[200] != uint64(tc.n-want) {
			t.Fatalf("rate %v: stats %+v", tc.rate, st)
		}
	}
}

func TestConcurrentVotes(t *testing.T) {
	s := New(Options{DBPool: 4, DBServiceTime: time.Millisecond, DBJitter: time.Millisecond})
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Every voter votes twice so duplicates race with first votes.
			for range 2 {
				do(t, s, "POST", "/votes", voteHdr(fmt.Sprint("voter-", i), fmt.Sprint("d", i%4)), `{"partyId":"p2"}`)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.VotesStored != n || st.Status[201] != n || st.Status[409] != n || st.MaxPoolInUse > 4 || st.MaxPoolInUse < 1 {
		t.Fatalf("stats %+v", st)
	}
	for d := range 4 {
		r := do(t, s, "GET", fmt.Sprintf("/votes/d%d/count", d), nil, "")
		if want := fmt.Sprintf(`{"district":"d%d","count":%d}`+"\n", d, n/4); r.body != want {
			t.Fatalf("count = %q, want %q", r.body, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	o := New(Options{}).Options()
	if o.DBPool != 16 || o.DBServiceTime != 2*time.Millisecond || o.DBWaitTimeout != time.Second || o.DBJitter != 0 || o.RateLimit != 0 || o.ErrorRate != 0 {
		t.Fatalf("defaults = %+v", o)
	}
	o = New(Options{DBPool: -1, DBJitter: -1, RateLimit: -1, ErrorRate: 2}).Options()
	if o.DBPool != 16 || o.DBJitter != 0 || o.RateLimit != 0 || o.ErrorRate != 1 {
		t.Fatalf("sanitised = %+v", o)
	}
}

func TestParseOptions(t *testing.T) {
	const in = "pool=4,service=20ms,jitter=5ms,wait=500ms,rate_limit=100,error_rate=0.01"
	o, err := ParseOptions(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{DBPool: 4, DBServiceTime: 20 * time.Millisecond, DBJitter: 5 * time.Millisecond, DBWaitTimeout: 500 * time.Millisecond, RateLimit: 100, ErrorRate: 0.01}
	if o != want {
		t.Fatalf("parsed %+v, want %+v", o, want)
	}
	if o.String() != in {
		t.Fatalf("String() = %q, want %q", o.String(), in)
	}
	for _, o := range []Options{
		{},
		want,
		{DBPool: 1},
		{DBServiceTime: 1500*time.Millisecond + 7, RateLimit: 0.3333333333333333, ErrorRate: 1e-9},
		{DBWaitTimeout: time.Hour + time.Nanosecond, ErrorRate: 1},
	} {
		back, err := ParseOptions(o.String())
		if err != nil || back != o {
			t.Errorf("round trip %+v -> %q -> %+v, %v", o, o.String(), back, err)
		}
	}
	if o, err := ParseOptions(" pool = 2 , wait=1s, "); err != nil || o != (Options{DBPool: 2, DBWaitTimeout: time.Second}) {
		t.Errorf("spaces/trailing comma: %+v %v", o, err)
	}

	for in, msg := range map[string]string{
		"pool=4,colour=red":  `unknown key "colour"`,
		"pool":               "not key=value",
		"=4":                 "not key=value",
		"pool=x":             "pool",
		"pool=-1":            ">= 0",
		"service=fast":       "service",
		"wait=-1s":           ">= 0",
		"rate_limit=-5":      ">= 0",
		"rate_limit=NaN":     "finite",
		"error_rate=1.5":     "[0,1]",
		"pool=1,pool=2":      "twice",
		"jitter=5":           "jitter",
		"error_rate=0.1,x=y": `unknown key "x"`,
	} {
		_, err := ParseOptions(in)
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseOptions(%q) error = %v, want mention of %q", in, err, msg)
		}
	}
	// The unknown-key error lists the valid keys so the fix is obvious.
	if _, err := ParseOptions("size=3"); err == nil || !strings.Contains(err.Error(), "rate_limit") {
		t.Errorf("unknown key error should list keys: %v", err)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\n\t", "héllo 世界", "\u2028"} {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%q -> %s -> %q (%v)", s, b, back, err)
		}
	}
}

func TestStartStop(t *testing.T) {
	before := runtime.NumGoroutine()
	url, stop, err := Start(context.Background(), "127.0.0.1:0", Options{DBServiceTime: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url = %q", url)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		res, err := c.Get(url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok" {
		t.Fatalf("healthz = %d %q", code, body)
	}
	if code, _ := get("/elections/e1/parties"); code != 200 {
		t.Fatalf("parties = %d", code)
	}
	req, _ := http.NewRequest("POST", url+"/votes", strings.NewReader(`{"partyId":"p1"}`))
	req.Header.Set("voter-id", "v1")
	req.Header.Set("election-district-id", "d1")
	res, err := c.Do(req)
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("vote: %v %v", res, err)
	}
	res.Body.Close()
	if code, body := get("/__stats"); code != 200 || !strings.Contains(body, `"votes_stored":1`) {
		t.Fatalf("__stats = %d %q", code, body)
	}
	tr.CloseIdleConnections()

	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	if _, err := c.Get(url + "/healthz"); err == nil {
		t.Fatal("server still answering after stop")
	}
	tr.CloseIdleConnections()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestStartStopsOnContext(t *testing.T) {
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	// A request queued for the pool must be released by the cancel rather
	// than hold shutdown for the whole wait timeout.
	url, stop, err := Start(ctx, "127.0.0.1:0", Options{DBPool: 1, DBServiceTime: 200 * time.Millisecond, DBWaitTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if res, err := c.Get(url + "/elections/e1/parties"); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	began := time.Now()
	cancel()
	if err := stop(); err != nil {
		t.Fatalf("stop after cancel: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	wg.Wait()
	tr.CloseIdleConnections()
	if _, err := c.Get(url + "/healthz"); err == nil {
		t.Fatal("server still answering after cancel")
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestStartBadAddr(t *testing.T) {
	if _, _, err := Start(context.Background(), "127.0.0.1:-1", Options{}); err == nil {
		t.Fatal("want listen error")
	}
}

// waitFor polls cond for up to 3s; goroutines and handlers wind down
// asynchronously, so one immediate check would be flaky.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("condition not met in time; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}
