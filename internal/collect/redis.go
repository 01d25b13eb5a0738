package collect

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

func init() {
	// go-redis logs every failed dial to stderr, where it would tear through
	// the live progress line; failures reach people as Problems instead.
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// redisCollector reads INFO. One connection, no retries: a retry would
// hide a dead server behind a sample that is merely slow.
type redisCollector struct {
	spec Spec
	cl   *redis.Client
}

func (c *redisCollector) open(ctx context.Context) error {
	var opts *redis.Options
	if strings.Contains(c.spec.Target, "://") {
		o, err := redis.ParseURL(c.spec.Target)
		if err != nil {
			return err
		}
		opts = o
	} else {
		opts = &redis.Options{Addr: c.spec.Target}
	}
	t := c.spec.sampleTimeout()
	opts.DialTimeout = c.spec.connectTimeout()
	opts.ReadTimeout = t
	opts.WriteTimeout = t
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	opts.PoolSize = 1
	opts.MinIdleConns = 0
	opts.ClientName = "stampede-monitor"
	// CLIENT SETINFO fails on servers before 7.2 and is noise in their logs.
	opts.DisableIdentity = true
	c.cl = redis.NewClient(opts)
	if err := c.cl.Ping(ctx).Err(); err != nil {
		c.close()
		return err
	}
	return nil
}

func (c *redisCollector) sample(ctx context.Context, e *emitter) error {
	// The default INFO sections hold everything below; "all" would add
	// per-command stats we don't read.
	txt, err := c.cl.Info(ctx).Result()
	if err != nil {
		return err
	}
	info := parseRedisInfo(txt)
	need := func(k string) (float64, error) {
		v, ok := info[k]
		if !ok {
			return 0, fmt.Errorf("INFO has no %s", k)
		}
		return v, nil
	}
	var firstErr error
	get := func(k string) float64 {
		v, err := need(k)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	}
	cmds := get("total_commands_processed")
	connected := get("connected_clients")
	blocked := get("blocked_clients")
	mem := get("used_memory")
	hits, misses := get("keyspace_hits"), get("keyspace_misses")
	evicted := get("evicted_keys")
	cpu := get("used_cpu_sys") + get("used_cpu_user")
	if firstErr != nil {
		return firstErr
	}
	// Our own INFO adds one command per interval to ops_per_sec.
	e.rate("ops_per_sec", "1/s", cmds, 1)
	e.gauge("clients.connected", "count", connected-1) // less our own connection
	e.gauge("clients.blocked", "count", blocked)
	e.gauge("memory.used_bytes", "bytes", mem)
	e.ratio("hit_ratio", "ratio", hits, hits+misses, 1)
	e.rate("evictions_per_sec", "1/s", evicted, 1)
	e.rate("cpu_pct", "pct", cpu, 100)
	if v, ok := info["rejected_connections"]; ok {
		// maxclients reached: the Redis form of pool exhaustion.
		e.rate("rejected_connections_per_sec", "1/s", v, 1)
	}
	return nil
}

// parseRedisInfo keeps the numeric fields of INFO's "key:value" lines.
func parseRedisInfo(s string) map[string]float64 {
	out := make(map[string]float64, 64)
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[k] = f
		}
	}
	return out
}

func (c *redisCollector) close() {
	if c.cl != nil {
		c.cl.Close()
		c.cl = nil
	}
}
