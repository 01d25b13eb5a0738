package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stampede-load/stampede/internal/collect"
)

// pgStore keeps the demo's data in PostgreSQL. Every demo instance shares
// the tables but writes under its own run id, so parallel demos (tests, a
// developer's second terminal) neither see nor reject each other's voters,
// and filler rows (run 0) are seeded once and reused.
type pgStore struct {
	pool  *pgxpool.Pool
	run   int64
	votes string // table name: the index mode picks the table
	// queryTimeout bounds one query once it holds a connection: a real
	// database finishes what it started, but not forever.
	queryTimeout time.Duration
}

const (
	pgParties        = "stampede_demo_parties"
	pgVotesIndexed   = "stampede_demo_votes"
	pgVotesNoIndex   = "stampede_demo_votes_noindex"
	pgSetupLockKey   = 0x5374616d70 // any constant shared by every demo instance
	pgStaleRunsAfter = "1 day"
)

// Open is New for options that may name a PostgreSQL database: it connects,
// creates and seeds the tables if needed, and fails if the database cannot
// be reached. Close the Server when done.
func Open(ctx context.Context, opts Options) (*Server, error) {
	s := New(opts)
	if s.opts.DB == "" {
		return s, nil
	}
	st, err := openPGStore(ctx, s.opts)
	if err != nil {
		return nil, err
	}
	s.db = st
	return s, nil
}

// Close releases the database pool and deletes this instance's votes; it
// is a no-op for the in-memory store.
func (s *Server) Close() {
	if s.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.db.pool.Exec(ctx, "DELETE FROM "+s.db.votes+" WHERE run = $1", s.db.run)
	s.db.pool.Close()
}

func openPGStore(ctx context.Context, o Options) (*pgStore, error) {
	secretFree := func(err error) error {
		return fmt.Errorf("demo database %s: %s", collect.Redact(o.DB), collect.RedactText(err.Error(), o.DB))
	}
	cfg, err := pgxpool.ParseConfig(o.DB)
	if err != nil {
		return nil, secretFree(err)
	}
	cfg.MaxConns = int32(o.DBConns)
	cfg.MinConns = 0
	cfg.ConnConfig.RuntimeParams["application_name"] = "stampede-demo"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, secretFree(err)
	}
	st := &pgStore{pool: pool, run: 1 + rand.Int64N(1<<62), votes: pgVotesIndexed, queryTimeout: 30 * time.Second}
	if o.MissingIndex {
		st.votes = pgVotesNoIndex
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := st.setup(sctx, o); err != nil {
		pool.Close()
		return nil, secretFree(err)
	}
	return st, nil
}

// setup makes the schema match the options. It runs under an advisory lock
// because CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin.
func (st *pgStore) setup(ctx context.Context, o Options) error {
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	stmts := []string{
		"SELECT pg_advisory_xact_lock(" + strconv.Itoa(pgSetupLockKey) + ")",
		"CREATE TABLE IF NOT EXISTS " + pgParties + " (id text PRIMARY KEY, name text NOT NULL)",
		"CREATE TABLE IF NOT EXISTS " + st.votes + ` (
			id bigserial PRIMARY KEY,
			run bigint NOT NULL,
			district_id text NOT NULL,
			voter_id text NOT NULL,
			party_id text NOT NULL,
			created_at timestamptz NOT NULL DEFAULT now())`,
		// Leftovers of demos that were killed before Close.
		"DELETE FROM " + st.votes + " WHERE run <> 0 AND created_at < now() - interval '" + pgStaleRunsAfter + "'",
	}
	if o.MissingIndex {
		stmts = append(stmts, "DROP INDEX IF EXISTS "+st.votes+"_key")
	} else {
		stmts = append(stmts, "CREATE UNIQUE INDEX IF NOT EXISTS "+st.votes+"_key ON "+st.votes+" (run, district_id, voter_id)")
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	for _, p := range parties {
		if _, err := tx.Exec(ctx, "INSERT INTO "+pgParties+" (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name", p.ID, p.Name); err != nil {
			return err
		}
	}
	var have int
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+st.votes+" WHERE run = 0").Scan(&have); err != nil {
		return err
	}
	if have < o.DBSeed {
		// Filler districts and voters are named so no plan's CSV hits them.
		_, err := tx.Exec(ctx, `INSERT INTO `+st.votes+` (run, district_id, voter_id, party_id)
			SELECT 0, 'seed-d' || (i % 1000), 'seed-v' || i, 'p' || (1 + i % 5)
			FROM generate_series($1::int + 1, $2::int) AS i`, have, o.DBSeed)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "ANALYZE "+st.votes); err != nil {
			return err
		}
	}
	return tx.Commit(ctx)
}

// acquire takes a pool connection within DBWaitTimeout, answering the
// request itself (503 or 499) when it cannot, like the simulated pool.
func (s *Server) acquire(w http.ResponseWriter, r *http.Request) (*pgxpool.Conn, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.DBWaitTimeout)
	defer cancel()
	if st := s.db.pool.Stat(); st.AcquiredConns() >= st.MaxConns() {
		s.poolWaits.Add(1)
	}
	c, err := s.db.pool.Acquire(ctx)
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		s.poolCancel.Add(1)
		s.reply(w, StatusClientClosed, errCancelled)
		return nil, false
	case errors.Is(err, context.DeadlineExceeded):
		s.poolTOs.Add(1)
		s.reply(w, http.StatusServiceUnavailable, errPoolTimeout)
		return nil, false
	default:
		s.reply(w, http.StatusServiceUnavailable, errDBDown)
		return nil, false
	}
	n := s.inUse.Add(1)
	for {
		m := s.maxInUse.Load()
		if n <= m || s.maxInUse.CompareAndSwap(m, n) {
			break
		}
	}
	return c, true
}

func (s *Server) release(c *pgxpool.Conn) {
	s.inUse.Add(-1)
	c.Release()
}

// queryCtx detaches a query from the client: like the simulated pool, a
// database finishes a query whose client hung up, and keeps the connection
// meanwhile.
func (s *Server) queryCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.db.queryTimeout)
}

// pgBegin is how every database handler starts: a pool connection (or the
// request already answered, ok false) and the detached query context.
// Hand both to pgEnd when the handler is done.
func (s *Server) pgBegin(w http.ResponseWriter, r *http.Request) (*pgxpool.Conn, context.Context, context.CancelFunc, bool) {
	c, ok := s.acquire(w, r)
	if !ok {
		return nil, nil, nil, false
	}
	ctx, cancel := s.queryCtx(r)
	return c, ctx, cancel, true
}

// pgEnd ends the query context before the connection goes back to the
// pool, the order the handlers' deferred calls always had.
func (s *Server) pgEnd(c *pgxpool.Conn, cancel context.CancelFunc) {
	cancel()
	s.release(c)
}

func (s *Server) pgParties(w http.ResponseWriter, r *http.Request, id string) {
	c, ctx, cancel, ok := s.pgBegin(w, r)
	if !ok {
		return
	}
	defer s.pgEnd(c, cancel)
	rows, err := c.Query(ctx, "SELECT id, name FROM "+pgParties+" ORDER BY id")
	if err != nil {
		s.reply(w, http.StatusServiceUnavailable, errDBDown)
		return
	}
	b := append([]byte(`{"election":`), appendJSONString(nil, id)...)
	b = append(b, `,"parties":[`...)
	n := 0
	var pid, name string
	_, err = pgx.ForEachRow(rows, []any{&pid, &name}, func() error {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = appendJSONString(b, pid)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, name)
		b = append(b, '}')
		return nil
	})
	if err != nil {
		s.reply(w, http.StatusServiceUnavailable, errDBDown)
		return
	}
	b = append(b, "]}\n"...)
	s.reply(w, http.StatusOK, b)
}

// pgVote stores a vote unless this voter already voted in this district.
// One statement: the NOT EXISTS check is what the composite index serves,
// and what scans the table without it.
func (s *Server) pgVote(w http.ResponseWriter, r *http.Request, voter, district, party string) {
	c, ctx, cancel, ok := s.pgBegin(w, r)
	if !ok {
		return
	}
	defer s.pgEnd(c, cancel)
	var id int64
	err := c.QueryRow(ctx, `INSERT INTO `+s.db.votes+` (run, district_id, voter_id, party_id)
		SELECT $1, $2, $3, $4
		WHERE NOT EXISTS (SELECT 1 FROM `+s.db.votes+` WHERE run = $1 AND district_id = $2 AND voter_id = $3)
		ON CONFLICT DO NOTHING
		RETURNING id`, s.db.run, district, voter, party).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		s.reply(w, http.StatusConflict, errDuplicate)
		return
	case err != nil:
		s.reply(w, http.StatusServiceUnavailable, errDBDown)
		return
	}
	s.stored.Add(1)
	b := append([]byte(nil), voteRespPrefix...)
	b = append(b, 'v')
	b = strconv.AppendInt(b, id, 10)
	b = append(b, voteRespSuffix...)
	s.reply(w, http.StatusCreated, b)
}

func (s *Server) pgCount(w http.ResponseWriter, r *http.Request, district string) {
	c, ctx, cancel, ok := s.pgBegin(w, r)
	if !ok {
		return
	}
	defer s.pgEnd(c, cancel)
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+s.db.votes+" WHERE run = $1 AND district_id = $2", s.db.run, district).Scan(&n); err != nil {
		s.reply(w, http.StatusServiceUnavailable, errDBDown)
		return
	}
	b := make([]byte, 0, 32+len(district))
	b = append(b, `{"district":`...)
	b = appendJSONString(b, district)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, "}\n"...)
	s.reply(w, http.StatusOK, b)
}

var errDBDown = []byte(`{"error":"database unavailable"}` + "\n")
