package plan

import (
	"net/netip"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ConnReuse is the connection reuse policy.
type ConnReuse uint8

const (
	// ReuseKeepAlive keeps each user's connection open across iterations.
	ReuseKeepAlive ConnReuse = iota
	// ReusePerIteration opens a new connection for each iteration, as
	// users who come and go would.
	ReusePerIteration
	// ReusePerRequest opens a new connection for every request.
	ReusePerRequest
)

func (r ConnReuse) String() string {
	return [...]string{"keep-alive", "per-iteration", "per-request"}[r]
}

// HTTPOptions are the plan's connection options.
type HTTPOptions struct {
	// SourceAddresses are local addresses to dial from, spread round-robin
	// over users: each source address has its own ephemeral port range, so
	// more of them hold more connections to one target.
	SourceAddresses []netip.Addr
	Reuse           ConnReuse
	// MaxConnsPerHost caps open connections to one host across all users
	// (0: no cap); a user waits for a free one, and the wait counts in its
	// latency, as a browser's connection limit would.
	MaxConnsPerHost int
	// MaxHeaderBytes bounds an answer's header block (0: the client's
	// default, 64 KiB): a longer one fails its request.
	MaxHeaderBytes int
	// MaxKeptBodyBytes bounds how much of each answer's body a user keeps
	// for its step's checks and captures (0: the default, 1 MiB); the rest
	// is read and counted, not stored.
	MaxKeptBodyBytes int
	// Version is http.version (h2c.go): auto (https negotiates h2 or
	// http/1.1 by ALPN), http/1.1, h2 (https must speak HTTP/2) or h2c.
	Version HTTPVersion
	// H2C is Version == VersionH2C: plain-HTTP requests go as HTTP/2
	// without TLS (prior knowledge, RFC 9113 section 3.3).
	H2C bool
	// H2Shared is http.h2_connections: shared: the users' HTTP/2 streams
	// multiplexed over shared connections (at most the server's
	// SETTINGS_MAX_CONCURRENT_STREAMS each, max_connections_per_host of
	// them), instead of one connection per user (per-user, the default).
	H2Shared bool
	// Redirects is http.redirects, the redirects a request follows (nil:
	// DefaultRedirects; RedirectLimit reads it with the step's own).
	Redirects *int
	// ProxySetting is http.proxy as written ("", none or a URL); Proxy is
	// the run's proxy once the environment is read too (nil: none).
	ProxySetting string
	Proxy        *Proxy
}

// maxSizeOption keeps a size option's value where an int holds it on every
// platform and where one user's buffer may sensibly grow.
const maxSizeOption = 1 << 30

// maxSourceAddresses bounds a CIDR's expansion.
const maxSourceAddresses = 4096

func init() {
	topExtensions = append(topExtensions, topExtension{key: "http", parse: (*parser).httpOptions})
}

func (p *parser) httpOptions(n *yaml.Node) {
	f := p.fields(n, "http", []string{"source_addresses", "connection", "max_connections_per_host", "max_header_bytes", "max_kept_body_bytes", "version", "h2_connections", "redirects", "proxy"})
	o := &p.plan.HTTP
	if e, ok := f["redirects"]; ok {
		if v, ok := p.redirects(e.v); ok {
			o.Redirects = &v
		}
	}
	if e, ok := f["proxy"]; ok {
		p.proxySetting(e.v) // proxy.go
	}
	if e, ok := f["version"]; ok {
		o.Version = p.httpVersion(e.v) // h2c.go
		o.H2C = o.Version == VersionH2C
	}
	if e, ok := f["h2_connections"]; ok {
		o.H2Shared = p.h2Connections(e.v) // h2c.go
	}
	if e, ok := f["source_addresses"]; ok {
		p.sourceAddresses(e.v)
	}
	if e, ok := f["connection"]; ok {
		if s, ok := p.text(e.v, "connection"); ok {
			switch s {
			case "keep-alive":
				o.Reuse = ReuseKeepAlive
			case "per-iteration":
				o.Reuse = ReusePerIteration
			case "per-request":
				o.Reuse = ReusePerRequest
			default:
				p.errf(e.v, "bad connection %s: expected keep-alive, per-iteration or per-request", q(s))
			}
		}
	}
	if e, ok := f["h2_connections"]; ok && o.H2Shared && o.Reuse == ReusePerRequest {
		p.errf(e.v, "h2_connections: shared cannot be combined with connection: per-request (shared connections carry many users' streams; a connection per request is per-user HTTP/2 or HTTP/1.1)")
	}
	if e, ok := f["max_connections_per_host"]; ok {
		if v, ok := p.intMin(e.v, "max_connections_per_host", 1); ok {
			o.MaxConnsPerHost = v
		}
	}
	if e, ok := f["max_header_bytes"]; ok {
		if v, ok := p.size(e.v, "max_header_bytes", 1<<10); ok {
			o.MaxHeaderBytes = v
		}
	}
	if e, ok := f["max_kept_body_bytes"]; ok {
		if v, ok := p.size(e.v, "max_kept_body_bytes", 1); ok {
			o.MaxKeptBodyBytes = v
		}
	}
}

// size reads a byte count: a whole number, or one with a unit (KiB, MiB,
// GiB, or the decimal KB, MB, GB), between lo and maxSizeOption.
func (p *parser) size(n *yaml.Node, what string, lo int) (int, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return 0, false
	}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > maxSizeOption/mult || int(v*mult) < lo {
		p.errf(n, "bad %s %s: expected a size from %d bytes to 1GiB, such as 65536, 64KiB or 1MiB", what, q(s), lo)
		return 0, false
	}
	return int(v * mult), true
}

// sourceAddresses accepts a list of addresses and CIDRs, or one of either.
func (p *parser) sourceAddresses(n *yaml.Node) {
	n = deref(n)
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items, _ = p.list(n, "source_addresses")
	}
	for _, it := range items {
		s, ok := p.text(it, "source address")
		if !ok {
			continue
		}
		if strings.Contains(s, "/") {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				p.errf(it, "bad source address range %s: expected a CIDR such as 127.0.0.0/28", q(s))
				continue
			}
			count := 0
			for a := pfx.Masked().Addr(); pfx.Contains(a); a = a.Next() {
				if count >= maxSourceAddresses {
					p.errf(it, "source address range %s has more than %d addresses: use a smaller range", q(s), maxSourceAddresses)
					break
				}
				// Skip network and broadcast-style ends of IPv4 ranges wider
				// than a /31, which cannot be bound on most hosts.
				if a.Is4() && pfx.Bits() < 31 && (a == pfx.Masked().Addr() || !pfx.Contains(a.Next())) {
					continue
				}
				p.plan.HTTP.SourceAddresses = append(p.plan.HTTP.SourceAddresses, a)
				count++
			}
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			p.errf(it, "bad source address %s: expected an IP address such as 127.0.0.2 or a CIDR", q(s))
			continue
		}
		p.plan.HTTP.SourceAddresses = append(p.plan.HTTP.SourceAddresses, a)
	}
}
