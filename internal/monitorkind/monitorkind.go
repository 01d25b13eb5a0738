// Package monitorkind names the kinds of server-side monitor a plan, the
// CLI, the collectors and the threshold parser all speak of, and how a
// monitor's series keys are prefixed. It imports nothing of stampede's, so
// packages plan, gate and collect, which sit on different floors of the
// import graph, share one list instead of keeping three copies.
package monitorkind

import "time"

// Monitor kinds, as written in a plan, on the command line and as the first
// word of a series key.
const (
	Postgres   = "postgres"
	Redis      = "redis"
	Prometheus = "prometheus"
	Process    = "process"
	Host       = "host"
)

// Self is the name of the generator's own process monitor, which every run
// records; a plan may not give it to another process.
const Self = "self"

// MinInterval keeps a typo like "1ms" from turning a monitor into load.
const MinInterval = 100 * time.Millisecond

// Kinds lists the kinds in the order help text gives them. It returns a new
// slice each time, so no caller can reorder another's.
func Kinds() []string {
	return []string{Postgres, Redis, Prometheus, Process, Host}
}

// Is reports whether s is a monitor kind.
func Is(s string) bool {
	switch s {
	case Postgres, Redis, Prometheus, Process, Host:
		return true
	}
	return false
}

// Label is the prefix of a monitor's series keys: "postgres",
// "postgres[orders]", "process[nginx]". A process monitor is always keyed by
// a name, and by its target when it has none.
func Label(kind, name, target string) string {
	if kind == Process && name == "" {
		name = target
	}
	if name == "" {
		return kind
	}
	return kind + "[" + name + "]"
}
