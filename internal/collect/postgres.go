package collect

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCollector reads pg_stat_activity and pg_stat_database over one
// connection of its own (not a pool: one connection is one known session
// to leave out of the counts, and it never competes with the application's
// pool for slots).
type pgCollector struct {
	spec  Spec
	cfg   *pgx.ConnConfig
	conn  *pgx.Conn
	names []string // query names, sorted so samples are deterministic
}

// pgStatsSQL is one statement, so each sample costs the server exactly one
// transaction (the only skew it adds to xact.commits_per_sec: +1/interval).
// Connection counts leave out our own session and background workers.
const pgStatsSQL = `
WITH a AS (
  SELECT state, wait_event_type, query_start, xact_start
  FROM pg_stat_activity
  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
), d AS (
  SELECT coalesce(sum(xact_commit), 0)::float8 AS commits,
         coalesce(sum(xact_rollback), 0)::float8 AS rollbacks,
         coalesce(sum(blks_hit), 0)::float8 AS blks_hit,
         coalesce(sum(blks_read), 0)::float8 AS blks_read,
         coalesce(sum(tup_returned), 0)::float8 AS tup_returned,
         coalesce(sum(tup_fetched), 0)::float8 AS tup_fetched,
         coalesce(sum(tup_inserted), 0)::float8 AS tup_inserted,
         coalesce(sum(tup_updated), 0)::float8 AS tup_updated,
         coalesce(sum(tup_deleted), 0)::float8 AS tup_deleted,
         coalesce(sum(deadlocks), 0)::float8 AS deadlocks,
         coalesce(sum(temp_bytes), 0)::float8 AS temp_bytes
  FROM pg_stat_database
)
SELECT
  (SELECT count(*) FILTER (WHERE state = 'active') FROM a)::float8,
  (SELECT count(*) FILTER (WHERE state = 'idle') FROM a)::float8,
  (SELECT count(*) FILTER (WHERE state LIKE 'idle in transaction%') FROM a)::float8,
  (SELECT count(*) FILTER (WHERE wait_event_type = 'Lock') FROM a)::float8,
  (SELECT count(*) FROM a)::float8,
  current_setting('max_connections')::float8,
  (SELECT coalesce(extract(epoch FROM max(now() - query_start) FILTER (WHERE state = 'active')), 0) FROM a)::float8,
  (SELECT coalesce(extract(epoch FROM max(now() - xact_start)), 0) FROM a)::float8,
  d.*
FROM d`

func (c *pgCollector) open(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(c.spec.Target)
	if err != nil {
		return err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	// Lets a DBA see what this session is, and lets other monitors and
	// tests tell it apart from the application's.
	cfg.RuntimeParams["application_name"] = "stampede-monitor"
	c.cfg = cfg
	for name := range c.spec.Queries {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	if err := c.connect(ctx); err != nil {
		return err
	}
	// Check the named queries now, so a typo is a warning at start rather
	// than a failing sample every second.
	for _, name := range c.names {
		var v float64
		if err := c.conn.QueryRow(ctx, c.spec.Queries[name]).Scan(&v); err != nil {
			c.close()
			return fmt.Errorf("query %s: %w (it must return one number)", name, err)
		}
	}
	return nil
}

func (c *pgCollector) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.cfg)
	if err != nil {
		return err
	}
	c.conn = conn
	return nil
}

func (c *pgCollector) sample(ctx context.Context, e *emitter) error {
	if c.conn == nil || c.conn.IsClosed() {
		// The server went away and maybe came back; each sample tries once.
		if err := c.connect(ctx); err != nil {
			return err
		}
	}
	var v [19]float64
	dst := make([]any, len(v))
	for i := range v {
		dst[i] = &v[i]
	}
	if err := c.conn.QueryRow(ctx, pgStatsSQL).Scan(dst...); err != nil {
		c.dropIfBroken()
		return err
	}
	e.gauge("connections.active", "count", v[0])
	e.gauge("connections.idle", "count", v[1])
	e.gauge("connections.idle_in_transaction", "count", v[2])
	e.gauge("connections.waiting_lock", "count", v[3])
	e.gauge("connections.total", "count", v[4])
	e.gauge("connections.max", "count", v[5])
	e.gauge("longest_query_s", "s", v[6])
	e.gauge("longest_xact_s", "s", v[7])
	e.rate("xact.commits_per_sec", "1/s", v[8], 1)
	e.rate("xact.rollbacks_per_sec", "1/s", v[9], 1)
	e.ratio("cache.hit_ratio", "ratio", v[10], v[10]+v[11], 1)
	e.rate("rows.returned_per_sec", "1/s", v[12], 1)
	e.rate("rows.fetched_per_sec", "1/s", v[13], 1)
	e.rate("rows.inserted_per_sec", "1/s", v[14], 1)
	e.rate("rows.updated_per_sec", "1/s", v[15], 1)
	e.rate("rows.deleted_per_sec", "1/s", v[16], 1)
	e.rate("deadlocks_per_sec", "1/s", v[17], 1)
	e.rate("temp_bytes_per_sec", "bytes/s", v[18], 1)
	for _, name := range c.names {
		var q float64
		if err := c.conn.QueryRow(ctx, c.spec.Queries[name]).Scan(&q); err != nil {
			c.dropIfBroken()
			return fmt.Errorf("query %s: %w", name, err)
		}
		e.gauge("query."+name, "", q)
	}
	return nil
}

// dropIfBroken closes a connection a timeout may have left mid-protocol,
// so the next sample starts clean instead of reading a stale reply.
func (c *pgCollector) dropIfBroken() { c.close() }

func (c *pgCollector) close() {
	if c.conn != nil {
		// Bounded: saying goodbye to a dead server must not hold up Stop.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.conn.Close(ctx)
		cancel()
		c.conn = nil
	}
}
