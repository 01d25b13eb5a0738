package plan

import (
	"slices"
	"strings"
)

// A SignalR scenario may spread its connections over several hub URLs,
// as a scaled-out backend or several service units would take them, so a
// fleet larger than one hub process can be driven and counted per hub:
//
//	signalr:
//	  urls: [http://10.0.0.1:5000/hubs/kitchen, http://10.0.0.2:5000/hubs/kitchen]
//	  spread: tenant               # or round_robin (the default)

// Ways of spreading connections over hub URLs.
const (
	SpreadRoundRobin = "round_robin" // connection i on URL i mod N
	SpreadTenant     = "tenant"      // a tenant's connections on one URL, tenant index mod N
)

var spreads = []string{SpreadRoundRobin, SpreadTenant}

var hubSchemes = []string{"http", "https", "ws", "wss"}

// hubURLs reads urls (exclusive with url) and spread into spec.
func (p *parser) hubURLs(spec *SignalRSpec, f map[string]kv, sc *scope) {
	e, ok := f["urls"]
	if !ok {
		if s, set := f["spread"]; set {
			p.errf(s.k, "spread applies to urls: give several hub URLs as urls: [...] to spread connections over them")
		}
		return
	}
	if u, both := f["url"]; both {
		p.errf(u.k, "signalr section has both url and urls: expected url for one hub, or urls to spread connections over several")
		return
	}
	items, _ := p.list(e.v, "urls")
	for _, it := range items {
		if t := p.connURL(it, sc, hubSchemes); t != nil {
			spec.URLs = append(spec.URLs, t)
		}
	}
	if len(items) == 0 {
		p.errf(e.v, "urls is empty: expected a list of hub URLs")
	}
	spec.Spread = SpreadRoundRobin
	if s, set := f["spread"]; set {
		if v, ok := p.text(s.v, "spread"); ok {
			v = strings.ToLower(strings.TrimSpace(v))
			switch {
			case !slices.Contains(spreads, v):
				p.errf(s.v, "%s", suggestion("bad spread "+q(v)+": expected round_robin (connection by connection) or tenant (a tenant's connections on one hub)", v, spreads))
			case v == SpreadTenant && !p.tenants:
				p.errf(s.v, "spread: tenant needs a tenant pool: add tenants: {count: N} at the top level")
			default:
				spec.Spread = v
			}
		}
	}
}

// HubName is how a hub URL is named in results: its text without the
// query, which may carry a credential.
func HubName(t *Template) string {
	name, _, _ := strings.Cut(t.Source, "?")
	return name
}
