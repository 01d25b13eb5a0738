package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stampede-load/stampede/internal/collect"
	"github.com/stampede-load/stampede/internal/result"
)

// The database .ci/services.sh starts; STAMPEDE_TEST_PG may point elsewhere.
const defaultTestPG = "postgres://stampede:stampede@127.0.0.1:5432/stampede?sslmode=disable"

// testPG skips when PostgreSQL is not running on a developer's machine, but
// fails in CI, where .ci/run starts it and a skip would hide the gap.
func testPG(t *testing.T) string {
	t.Helper()
	u := os.Getenv("STAMPEDE_TEST_PG")
	if u == "" {
		u = defaultTestPG
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not reachable in CI (.ci/services.sh should have started it): %v", err)
		}
		t.Skipf("PostgreSQL not reachable (run .ci/services.sh): %v", err)
	}
	c.Close(ctx)
	return u
}

// openPG is Open for a test: a small seed keeps the first run quick, and
// the server is closed (its votes deleted) when the test ends.
func openPG(t *testing.T, extra string) *Server {
	t.Helper()
	o, err := ParseOptions("db=" + testPG(t) + ",db_seed=20000" + extra)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestParseOptionsDB(t *testing.T) {
	const in = "pool=4,db=postgres://app:hunter2@127.0.0.1:5432/x?sslmode=disable,db_pool=3,missing_index=true,db_seed=500"
	o, err := ParseOptions(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{DBPool: 4, DB: "postgres://app:hunter2@127.0.0.1:5432/x?sslmode=disable", DBConns: 3, MissingIndex: true, DBSeed: 500}
	if o != want {
		t.Fatalf("parsed %+v", o)
	}
	if back, err := ParseOptions(o.String()); err != nil || back != o {
		t.Errorf("round trip %q -> %+v %v", o.String(), back, err)
	}
	// The child process needs the password; people and logs must not see it.
	if r := o.Redacted(); strings.Contains(r, "hunter2") || !strings.Contains(r, "db=postgres://app:xxxxx@127.0.0.1:5432/x") {
		t.Errorf("Redacted() = %q", r)
	}
	if d := New(Options{DB: "x"}).Options(); d.DBConns != DefaultPGConns || d.DBSeed != DefaultPGSeed {
		t.Errorf("db defaults %+v", d)
	}
	for in, msg := range map[string]string{
		"db=":                "postgres",
		"db_pool=-2":         ">= 0",
		"missing_index=ja":   "missing_index",
		"db_seed=many":       "db_seed",
		"db=x,db=postgres:y": "twice",
	} {
		if _, err := ParseOptions(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseOptions(%q) = %v, want mention of %q", in, err, msg)
		}
	}
}

func TestPGOpenFails(t *testing.T) {
	// Nothing listens on port 1; the error names the database without its password.
	_, err := Open(context.Background(), Options{DB: "postgres://app:hunter2@127.0.0.1:1/x?connect_timeout=2"})
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "demo database") {
		t.Fatalf("err = %v", err)
	}
}

func TestPGVoteFlow(t *testing.T) {
	s := openPG(t, "")
	mem := New(Options{})

	// Same answers as the in-memory store, so plans work against either.
	got := do(t, s, "GET", "/elections/2026/parties", nil, "")
	want := do(t, mem, "GET", "/elections/2026/parties", nil, "")
	if got.code != 200 || got.body != want.body {
		t.Fatalf("parties %d %q, want %q", got.code, got.body, want.body)
	}
	hdr := map[string]string{"voter-id": "alice", "election-district-id": "d7"}
	rec := do(t, s, "POST", "/votes", hdr, `{"partyId":"p2"}`)
	var v struct{ VoteID, Status string }
	if rec.code != 201 || json.Unmarshal([]byte(rec.body), &struct {
		VoteID *string `json:"vote_id"`
		Status *string `json:"status"`
	}{&v.VoteID, &v.Status}) != nil || v.Status != "counted" || !strings.HasPrefix(v.VoteID, "v") {
		t.Fatalf("vote %d %q", rec.code, rec.body)
	}
	if rec := do(t, s, "POST", "/votes", hdr, `{"partyId":"p3"}`); rec.code != http.StatusConflict {
		t.Errorf("duplicate vote %d %q", rec.code, rec.body)
	}
	do(t, s, "POST", "/votes", map[string]string{"voter-id": "bob", "election-district-id": "d7"}, `{"partyId":"p1"}`)
	if rec := do(t, s, "GET", "/votes/d7/count", nil, ""); rec.code != 200 || rec.body != `{"district":"d7","count":2}`+"\n" {
		t.Errorf("count %d %q", rec.code, rec.body)
	}
	// Validation still answers before the database.
	if rec := do(t, s, "POST", "/votes", hdr, `{"partyId":"p9"}`); rec.code != 400 {
		t.Errorf("bad party %d", rec.code)
	}
	if st := s.Stats(); st.VotesStored != 2 || st.MaxPoolInUse < 1 {
		t.Errorf("stats %+v", st)
	}

	// Another demo instance on the same tables starts with nobody voted.
	other := openPG(t, "")
	if rec := do(t, other, "POST", "/votes", hdr, `{"partyId":"p2"}`); rec.code != 201 {
		t.Errorf("second instance rejected alice: %d %q", rec.code, rec.body)
	}
	if rec := do(t, other, "GET", "/votes/d7/count", nil, ""); rec.body != `{"district":"d7","count":1}`+"\n" {
		t.Errorf("second instance count %q", rec.body)
	}
}

// TestPGMissingIndex checks the plan rather than timing it: without the
// composite index the duplicate check and the count scan the table.
func TestPGMissingIndex(t *testing.T) {
	for _, missing := range []bool{false, true} {
		s := openPG(t, fmt.Sprintf(",missing_index=%v", missing))
		var plan strings.Builder
		rows, err := s.db.pool.Query(context.Background(), "EXPLAIN SELECT count(*) FROM "+s.db.votes+" WHERE run = $1 AND district_id = $2", s.db.run, "d1")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan.WriteString(line + "\n")
		}
		rows.Close()
		scan := strings.Contains(plan.String(), "Seq Scan")
		if scan != missing {
			t.Errorf("missing_index=%v: plan\n%s", missing, plan.String())
		}
		var n int
		s.db.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+s.db.votes+" WHERE run = 0").Scan(&n)
		if n < 20000 {
			t.Errorf("seeded %d rows, want >= 20000", n)
		}
	}
}

func TestPGPoolTimeout(t *testing.T) {
	s := openPG(t, ",db_pool=2,wait=50ms")
	// Hold every connection, as slow queries would.
	ctx := context.Background()
	c1, err1 := s.db.pool.Acquire(ctx)
	c2, err2 := s.db.pool.Acquire(ctx)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	rec := do(t, s, "GET", "/elections/1/parties", nil, "")
	c1.Release()
	c2.Release()
	if rec.code != http.StatusServiceUnavailable || !strings.Contains(rec.body, "db pool timeout") {
		t.Errorf("exhausted pool: %d %q", rec.code, rec.body)
	}
	if st := s.Stats(); st.PoolTimeouts != 1 || st.PoolWaits != 1 {
		t.Errorf("stats %+v", st)
	}
	if rec := do(t, s, "GET", "/elections/1/parties", nil, ""); rec.code != 200 {
		t.Errorf("after release: %d", rec.code)
	}
}

// TestPGDemoMonitored is the picture in small: votes driven through
// the demo backed by PostgreSQL without its index, with a postgres monitor
// running; connections and transactions rise in the series when load
// starts.
func TestPGDemoMonitored(t *testing.T) {
	pgURL := testPG(t)
	s := openPG(t, ",db_pool=4,missing_index=true,wait=5s")
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	set, probs, err := collect.Start(context.Background(), []collect.Spec{{Kind: collect.KindPostgres, Target: pgURL, Interval: 200 * time.Millisecond}}, nil)
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	// An idle stretch first, to rise from.
	time.Sleep(700 * time.Millisecond)
	ser, _ := set.Snapshot()
	loadFrom := ser["postgres.connections.active"].T[len(ser["postgres.connections.active"].T)-1]

	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	cl := srv.Client()
	for w := range 12 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				req, _ := http.NewRequest("POST", srv.URL+"/votes", strings.NewReader(`{"partyId":"p1"}`))
				req.Header.Set("voter-id", fmt.Sprintf("w%d-%d", w, i))
				req.Header.Set("election-district-id", fmt.Sprintf("d%d", i%50))
				resp, err := cl.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 201 {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	time.Sleep(1200 * time.Millisecond) // commits reach pg_stat_database within ~1s
	ser, probs = set.Stop()
	if len(probs) > 0 {
		t.Errorf("problems %+v", probs)
	}
	if ok.Load() < 20 || failed.Load() > 0 {
		t.Fatalf("votes: %d ok, %d failed", ok.Load(), failed.Load())
	}
	before := func(k string) result.MonitorStats { return row(ser, k, 0, loadFrom) }
	during := func(k string) result.MonitorStats { return row(ser, k, loadFrom+0.01, 1e9) }
	// Four pool connections busy scanning the table.
	if a, b := before("postgres.connections.active"), during("postgres.connections.active"); b.Max < 3 || b.Max <= a.Min {
		t.Errorf("active connections did not rise: before %+v, during %+v", a, b)
	}
	if a, b := before("postgres.xact.commits_per_sec"), during("postgres.xact.commits_per_sec"); b.Max < a.Max+10 {
		t.Errorf("commits/s did not rise: before %+v, during %+v (%d votes)", a, b, ok.Load())
	}
	if b := during("postgres.rows.inserted_per_sec"); b.Max < 5 {
		t.Errorf("inserts/s %+v", b)
	}
	t.Logf("%d votes in 2s; active max %.0f; commits/s max %.0f; longest query %.3fs",
		ok.Load(), during("postgres.connections.active").Max, during("postgres.xact.commits_per_sec").Max, during("postgres.longest_query_s").Max)
}

// row is key's figures over [from, to]; zero when it has no point there.
func row(ser map[string]result.MonitorSeries, key string, from, to float64) result.MonitorStats {
	if st := ser[key].Stats(from, to); st.N > 0 {
		return st
	}
	return result.MonitorStats{}
}
