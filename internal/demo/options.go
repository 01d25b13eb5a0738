package demo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/collect"
)

// Defaults applied by New to zero-valued options. They are small enough that
// a single load generator on a laptop can push the demo into saturation.
const (
	DefaultDBPool        = 16
	DefaultDBServiceTime = 2 * time.Millisecond
	DefaultDBWaitTimeout = time.Second
	// DefaultPGConns is the PostgreSQL pool size when DB is set: small, like
	// the per-instance pools that run out first in real deployments.
	DefaultPGConns = 8
	// DefaultPGSeed is how many votes (of districts no plan uses) the
	// PostgreSQL table starts with: enough that a scan of it is measurably
	// slow (tens of ms) once the composite index is missing.
	DefaultPGSeed = 200_000
)

// Options shape how the demo service behaves under load. The zero value is
// valid: New fills the defaults.
type Options struct {
	// DBPool is the size of the simulated database connection pool (default 16).
	DBPool int
	// DBServiceTime is how long each simulated query holds a pool connection
	// (default 2ms); DBJitter adds uniform random extra up to that much.
	DBServiceTime, DBJitter time.Duration
	// DBWaitTimeout: a request that waits longer than this for a pool
	// connection fails with 503 (default 1s), like a real pool timeout.
	DBWaitTimeout time.Duration
	// RateLimit > 0 answers 429 once more than this many requests/s arrive
	// (token bucket, burst = RateLimit). /healthz and /__stats are exempt so
	// readiness probes and reporting keep working while the service sheds load.
	RateLimit float64
	// ErrorRate in [0,1]: that fraction of requests answers 500
	// (deterministic: every round(1/ErrorRate)-th request, so tests can
	// count). /healthz and /__stats are exempt, as for RateLimit.
	ErrorRate float64
	// DB, when set, keeps votes and parties in PostgreSQL (a postgres:// URL
	// or key=value DSN without commas) instead of memory, so the seeds'
	// database bottlenecks are real and show in a postgres monitor. The
	// simulated pool (DBPool, DBServiceTime, DBJitter) is then unused;
	// DBWaitTimeout still bounds the wait for a pool connection.
	DB string
	// DBConns is the size of the PostgreSQL connection pool (default 8).
	DBConns int
	// MissingIndex leaves out the composite (run, district, voter) index, so
	// the duplicate-vote check and the district count scan the whole table:
	// the slow query of a forgotten migration.
	MissingIndex bool
	// DBSeed is how many filler votes the table holds before the run
	// (default 200000); they make a scan cost what it would in production.
	DBSeed int
}

// Option keys, in the order String writes them.
const (
	keyPool      = "pool"
	keyService   = "service"
	keyJitter    = "jitter"
	keyWait      = "wait"
	keyRateLimit = "rate_limit"
	keyErrorRate = "error_rate"
	keyDB        = "db"
	keyDBPool    = "db_pool"
	keyMissing   = "missing_index"
	keyDBSeed    = "db_seed"
)

var validKeys = []string{keyPool, keyService, keyJitter, keyWait, keyRateLimit, keyErrorRate, keyDB, keyDBPool, keyMissing, keyDBSeed}

// ParseOptions reads the compact form used by `target: demo` in plans and by
// CLI flags, e.g. "pool=4,service=20ms,jitter=5ms,wait=500ms,rate_limit=100,error_rate=0.01".
// Keys left out keep their zero value, which New turns into the default, so
// "" is valid and means "all defaults".
func ParseOptions(s string) (Options, error) {
	var o Options
	seen := make(map[string]bool, len(validKeys))
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			// Tolerate "pool=4," and empty input so hand-written plans don't
			// fail on a trailing comma.
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			return Options{}, fmt.Errorf("demo options: %q is not key=value (keys: %s)", item, strings.Join(validKeys, ", "))
		}
		if seen[key] {
			return Options{}, fmt.Errorf("demo options: %q given twice", key)
		}
		seen[key] = true
		err := o.set(key, val)
		if err == errUnknownKey {
			return Options{}, fmt.Errorf("demo options: unknown key %q (keys: %s)", key, strings.Join(validKeys, ", "))
		}
		if err != nil {
			if key == keyDB {
				val = collect.Redact(val)
			}
			return Options{}, fmt.Errorf("demo options: %s=%q: %w", key, val, err)
		}
	}
	return o, nil
}

// errUnknownKey is set's answer for a key it does not know.
var errUnknownKey = errors.New("unknown key")

// set sets the option key to val, checking its range.
func (o *Options) set(key, val string) error {
	var err error
	switch key {
	case keyPool:
		var n int
		n, err = strconv.Atoi(val)
		if err == nil && n < 0 {
			err = fmt.Errorf("must be >= 0")
		}
		o.DBPool = n
	case keyService:
		o.DBServiceTime, err = parseDur(val)
	case keyJitter:
		o.DBJitter, err = parseDur(val)
	case keyWait:
		o.DBWaitTimeout, err = parseDur(val)
	case keyRateLimit:
		o.RateLimit, err = parseFloat(val)
		if err == nil && o.RateLimit < 0 {
			err = fmt.Errorf("must be >= 0")
		}
	case keyErrorRate:
		o.ErrorRate, err = parseFloat(val)
		if err == nil && (o.ErrorRate < 0 || o.ErrorRate > 1) {
			err = fmt.Errorf("must be in [0,1]")
		}
	case keyDB:
		o.DB = val
		if val == "" {
			err = fmt.Errorf("must be a postgres:// URL")
		}
	case keyDBPool:
		o.DBConns, err = strconv.Atoi(val)
		if err == nil && o.DBConns < 0 {
			err = fmt.Errorf("must be >= 0")
		}
	case keyMissing:
		o.MissingIndex, err = strconv.ParseBool(val)
	case keyDBSeed:
		o.DBSeed, err = strconv.Atoi(val)
		if err == nil && o.DBSeed < 0 {
			err = fmt.Errorf("must be >= 0")
		}
	default:
		return errUnknownKey
	}
	return err
}

func parseDur(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("must be >= 0")
	}
	return d, nil
}

func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("must be a finite number")
	}
	return f, nil
}

// String writes the compact form ParseOptions reads. Zero fields are left
// out so the string stays short and ParseOptions(o.String()) == o.
func (o Options) String() string {
	var b []byte
	add := func(key, val string) {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(b, key...)
		b = append(b, '=')
		b = append(b, val...)
	}
	if o.DBPool != 0 {
		add(keyPool, strconv.Itoa(o.DBPool))
	}
	if o.DBServiceTime != 0 {
		add(keyService, o.DBServiceTime.String())
	}
	if o.DBJitter != 0 {
		add(keyJitter, o.DBJitter.String())
	}
	if o.DBWaitTimeout != 0 {
		add(keyWait, o.DBWaitTimeout.String())
	}
	if o.RateLimit != 0 {
		add(keyRateLimit, strconv.FormatFloat(o.RateLimit, 'g', -1, 64))
	}
	if o.ErrorRate != 0 {
		add(keyErrorRate, strconv.FormatFloat(o.ErrorRate, 'g', -1, 64))
	}
	if o.DB != "" {
		add(keyDB, o.DB)
	}
	if o.DBConns != 0 {
		add(keyDBPool, strconv.Itoa(o.DBConns))
	}
	if o.MissingIndex {
		add(keyMissing, "true")
	}
	if o.DBSeed != 0 {
		add(keyDBSeed, strconv.Itoa(o.DBSeed))
	}
	return string(b)
}

// Redacted is String with the database password replaced, for anything a
// person or a log will see; String itself must keep it, since it is how
// options reach the demo's child process.
func (o Options) Redacted() string {
	o.DB = collect.Redact(o.DB)
	return o.String()
}

// withDefaults is what New runs on; negative values the type cannot forbid
// are treated as "off" or "default" rather than failing, since New has no
// error to return.
func (o Options) withDefaults() Options {
	if o.DBPool <= 0 {
		o.DBPool = DefaultDBPool
	}
	if o.DBServiceTime <= 0 {
		o.DBServiceTime = DefaultDBServiceTime
	}
	if o.DBJitter < 0 {
		o.DBJitter = 0
	}
	if o.DBWaitTimeout <= 0 {
		o.DBWaitTimeout = DefaultDBWaitTimeout
	}
	if o.DBConns <= 0 {
		o.DBConns = DefaultPGConns
	}
	if o.DBSeed <= 0 {
		o.DBSeed = DefaultPGSeed
	}
	if o.RateLimit < 0 || math.IsNaN(o.RateLimit) {
		o.RateLimit = 0
	}
	if !(o.ErrorRate > 0) { // also catches NaN
		o.ErrorRate = 0
	} else if o.ErrorRate > 1 {
		o.ErrorRate = 1
	}
	return o
}
