// Package collect samples server-side metrics — PostgreSQL, Redis,
// Prometheus text endpoints, processes, the host — on the run clock, beside
// the load, so a flat throughput can be laid next to a database at 100% CPU
// or a pool with every connection active: often the only way to see why
// adding users stopped adding throughput.
//
// Each monitor samples on its own goroutine and keeps its own bounded
// series; nothing here is on the load's hot path, and a slow or dead
// monitor is reported as a Problem rather than waited for.
package collect

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stampede-load/stampede/internal/monitorkind"
)

// Monitor kinds.
const (
	KindPostgres   = monitorkind.Postgres
	KindRedis      = monitorkind.Redis
	KindPrometheus = monitorkind.Prometheus
	KindProcess    = monitorkind.Process
	KindHost       = monitorkind.Host
)

// Kinds lists the monitor kinds, for help text and "did you mean" hints.
var Kinds = monitorkind.Kinds()

// DefaultInterval is how often a monitor samples unless told otherwise: the
// same 1 s resolution as the load series, so the two line up point by point.
const DefaultInterval = time.Second

// MinInterval keeps a typo like "1ms" from turning a monitor into load.
const MinInterval = monitorkind.MinInterval

// Spec describes one monitor.
type Spec struct {
	// Kind is one of the Kind* constants.
	Kind string
	// Target is what to watch: a postgres URL or key=value DSN, a redis
	// address or redis:// URL, a Prometheus metrics URL, a process name or
	// pid. Empty for host.
	Target string
	// Name tells two monitors of one kind apart in series keys
	// ("postgres[orders].connections.active"). A process monitor is always
	// keyed by name, and uses Target when Name is empty.
	Name string
	// Interval between samples; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout bounds connecting at start and each sample; 0 means the
	// interval (at least 1 s for connecting), so a stuck server cannot stack
	// samples up.
	Timeout time.Duration
	// Required makes a monitor that cannot start an error instead of a
	// warning: the run should not go ahead without it.
	Required bool
	// Select (prometheus only) keeps only metrics matching one of these
	// selectors: a name, or a name with label matchers such as
	// `http_requests_total{code="500"}` or `{__name__=~"node_cpu.*"}`.
	Select []string
	// Queries (postgres only) are extra series: name → SQL returning one
	// number, recorded as postgres.query.NAME.
	Queries map[string]string
}

// SelfSpec watches the generator's own process the way any process monitor
// would, as process[self]: its CPU feeds the generator-health indicator,
// and drawing it beside the target's CPU shows which side ran out first.
func SelfSpec() Spec {
	return Spec{Kind: KindProcess, Target: strconv.Itoa(os.Getpid()), Name: monitorkind.Self}
}

var (
	nameRE      = regexp.MustCompile(`^[A-Za-z0-9_:@/-][A-Za-z0-9_.:@/-]*$`)
	queryNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Label is the prefix of the monitor's series keys: "postgres",
// "postgres[orders]", "process[nginx]", "host".
func (s Spec) Label() string { return monitorkind.Label(s.Kind, s.Name, s.Target) }

// String names the monitor for people: its label and target, with any
// password in the target replaced.
func (s Spec) String() string {
	if s.Target == "" || s.Kind == KindProcess {
		return s.Label()
	}
	return s.Label() + " " + Redact(s.Target)
}

// Validate checks a spec without connecting to anything.
func (s Spec) Validate() error {
	switch s.Kind {
	case KindPostgres, KindRedis, KindPrometheus, KindProcess:
		if strings.TrimSpace(s.Target) == "" {
			return fmt.Errorf("monitor %s: needs a target", s.Kind)
		}
	case KindHost:
		if s.Target != "" {
			return fmt.Errorf("monitor host: takes no target (it watches this machine), got %q", Redact(s.Target))
		}
	case "":
		return fmt.Errorf("monitor: kind missing (one of %s)", strings.Join(Kinds, ", "))
	default:
		return fmt.Errorf("monitor: unknown kind %q (one of %s)", s.Kind, strings.Join(Kinds, ", "))
	}
	if s.Name != "" && (!nameRE.MatchString(s.Name) || strings.Contains(s.Name, "..")) {
		return fmt.Errorf("monitor %s: name %q may hold only letters, digits and _ . : @ / -", s.Kind, s.Name)
	}
	if s.Kind == KindProcess && s.Name == "" && strings.ContainsAny(s.Target, "[] \t") {
		return fmt.Errorf("monitor process: %q cannot key a series; give it a name", s.Target)
	}
	if s.Interval != 0 && s.Interval < MinInterval {
		return fmt.Errorf("monitor %s: interval %v is below the minimum %v", s.Label(), s.Interval, MinInterval)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("monitor %s: timeout must not be negative", s.Label())
	}
	if len(s.Select) > 0 && s.Kind != KindPrometheus {
		return fmt.Errorf("monitor %s: select applies only to prometheus monitors", s.Label())
	}
	for _, sel := range s.Select {
		if _, err := parseSelector(sel); err != nil {
			return fmt.Errorf("monitor %s: select %q: %v", s.Label(), sel, err)
		}
	}
	if len(s.Queries) > 0 && s.Kind != KindPostgres {
		return fmt.Errorf("monitor %s: queries apply only to postgres monitors", s.Label())
	}
	for name, q := range s.Queries {
		if !queryNameRE.MatchString(name) {
			return fmt.Errorf("monitor %s: query name %q must be lower-case letters, digits and _", s.Label(), name)
		}
		if strings.TrimSpace(q) == "" {
			return fmt.Errorf("monitor %s: query %q is empty", s.Label(), name)
		}
	}
	if s.Kind == KindPrometheus {
		u, err := url.Parse(s.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("monitor %s: target %q is not an http(s) URL", s.Label(), Redact(s.Target))
		}
	}
	return nil
}

func (s Spec) interval() time.Duration {
	if s.Interval <= 0 {
		return DefaultInterval
	}
	return s.Interval
}

func (s Spec) sampleTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return s.interval()
}

func (s Spec) connectTimeout() time.Duration {
	return max(s.sampleTimeout(), 3*time.Second)
}

// ParseSpec reads the CLI form of a monitor: "KIND" or "KIND=TARGET", e.g.
// "host", "redis=127.0.0.1:6379", "process=nginx",
// "postgres=postgres://user:${PGPASSWORD}@db:5432/app". Everything after
// the first "=" is the target, so URLs with "=" in them pass unchanged.
func ParseSpec(s string) (Spec, error) {
	kind, target, _ := strings.Cut(strings.TrimSpace(s), "=")
	sp := Spec{Kind: strings.TrimSpace(kind), Target: strings.TrimSpace(target)}
	return sp, sp.Validate()
}

// checkSpecs validates every spec and that no two share a series prefix.
func checkSpecs(specs []Spec) error {
	seen := make(map[string]bool, len(specs))
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return err
		}
		l := s.Label()
		if seen[l] {
			return fmt.Errorf("monitor %s: given twice; give one of them a name", l)
		}
		seen[l] = true
	}
	return nil
}
