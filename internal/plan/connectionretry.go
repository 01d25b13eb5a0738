package plan

import (
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// How a connection slot retries after a failed connect or a lost
// connection, as the official clients and any well-behaved client do:
// exponential backoff with full jitter, at least the server's
// Retry-After, and a bounded number of attempts.
//
//	reconnect: 1s                 # the initial delay; the rest default
//	reconnect: {initial: 1s, max: 30s, attempts: 10, jitter: full}

// Retry is a connection scenario's reconnect policy.
type Retry struct {
	// Initial bounds the first delay; each failed attempt in a row
	// doubles the bound, up to Max.
	Initial time.Duration
	Max     time.Duration
	// Attempts is how many attempts in a row may fail before the slot
	// gives up for the rest of the run; 0: never gives up. A connection
	// held successfully starts the count (and the backoff) afresh.
	Attempts int
	// Jitter draws each delay uniformly from zero to the bound ("full",
	// the default), so a fleet refused at once does not come back at
	// once; false waits the bound exactly ("none").
	Jitter bool
}

const defaultRetryMax = 30 * time.Second

// maxRetryAttempts is the most attempts in a row a plan may allow before
// giving up (a slot counts its failures in 16 bits).
const maxRetryAttempts = 65535

var (
	retryKeys   = []string{"initial", "max", "attempts", "jitter"}
	jitterKinds = []string{"full", "none"}
)

func defaultRetry() Retry {
	return Retry{Initial: defaultReconnect, Max: defaultRetryMax, Jitter: true}
}

// reconnect reads reconnect: a duration (the initial delay, as it always
// meant) or a mapping of the policy's parts.
func (p *parser) reconnect(c *Connection, n *yaml.Node) {
	if deref(n).Kind == yaml.ScalarNode {
		if d, ok := p.duration(n, "reconnect", true); ok {
			c.Retry.Initial = d
			c.Retry.Max = max(c.Retry.Max, d)
		}
		return
	}
	f := p.fields(n, "reconnect", retryKeys)
	r := &c.Retry
	if e, ok := f["initial"]; ok {
		if d, ok := p.duration(e.v, "reconnect initial", true); ok {
			r.Initial = d
			if _, set := f["max"]; !set {
				r.Max = max(r.Max, d)
			}
		}
	}
	if e, ok := f["max"]; ok {
		if d, ok := p.duration(e.v, "reconnect max", true); ok {
			if d < r.Initial {
				p.errf(e.v, "reconnect max %s is below its initial delay %s: expected max at least initial", d, r.Initial)
			} else {
				r.Max = d
			}
		}
	}
	if e, ok := f["attempts"]; ok {
		if v, ok := p.intMin(e.v, "reconnect attempts", 0); ok {
			if v > maxRetryAttempts {
				p.errf(e.v, "reconnect attempts %d is too many: expected at most %d, or 0 (never give up)", v, maxRetryAttempts)
			} else {
				r.Attempts = v
			}
		}
	}
	if e, ok := f["jitter"]; ok {
		if v, ok := p.text(e.v, "reconnect jitter"); ok {
			v = strings.ToLower(strings.TrimSpace(v))
			if slices.Contains(jitterKinds, v) {
				r.Jitter = v == "full"
			} else {
				p.errf(e.v, "%s", suggestion("bad reconnect jitter "+q(v)+": expected full (a delay drawn from zero to the backoff) or none (the backoff exactly)", v, jitterKinds))
			}
		}
	}
}

// reconnectSchema is reconnect's JSON Schema: a duration, or the policy's
// parts.
func reconnectSchema() obj {
	return obj{"anyOf": []obj{duration(), {
		"type": "object", "additionalProperties": false,
		"properties": obj{"initial": duration(), "max": duration(), "attempts": intish(), "jitter": enum(jitterKinds...)},
	}}}
}
