package plan

import "gopkg.in/yaml.v3"

// HTTPVersion is http.version: which HTTP the run speaks.
type HTTPVersion uint8

const (
	// VersionAuto: https negotiates h2 or http/1.1 by ALPN (the server
	// chooses); http is HTTP/1.1. The default.
	VersionAuto HTTPVersion = iota
	// VersionHTTP1: HTTP/1.1 only, https offering only http/1.1.
	VersionHTTP1
	// VersionH2: https must negotiate h2 (a server that does not fails
	// the connection as a TLS failure); http stays HTTP/1.1.
	VersionH2
	// VersionH2C: plain http as HTTP/2 with prior knowledge.
	VersionH2C
)

func (v HTTPVersion) String() string {
	return [...]string{"auto", "http/1.1", "h2", "h2c"}[v]
}

// httpVersion reads http.version.
func (p *parser) httpVersion(n *yaml.Node) HTTPVersion {
	s, ok := p.text(n, "version")
	if !ok {
		return VersionAuto
	}
	switch s {
	case "auto":
		return VersionAuto
	case "http/1.1", "1.1", "http1":
		return VersionHTTP1
	case "h2":
		return VersionH2
	case "h2c":
		return VersionH2C
	}
	msg := "bad http version " + q(s) + ": expected auto (https negotiates h2 or http/1.1), http/1.1, h2 (https, HTTP/2 required) or h2c (HTTP/2 over plain http)"
	if s == "2" || s == "http/2" || s == "http2" || s == "h2/tls" {
		msg = "bad http version " + q(s) + ": write h2 for HTTP/2 over https, or h2c for HTTP/2 over plain http"
	}
	p.errf(n, "%s", msg)
	return VersionAuto
}

// h2Connections reads http.h2_connections: per-user (the default: each
// user its own HTTP/2 connection per host) or shared.
func (p *parser) h2Connections(n *yaml.Node) bool {
	s, ok := p.text(n, "h2_connections")
	if !ok {
		return false
	}
	switch s {
	case "per-user":
		return false
	case "shared":
		return true
	}
	p.errf(n, "bad h2_connections %s: expected per-user (each user its own HTTP/2 connection per host) or shared (users' streams multiplexed over shared connections)", q(s))
	return false
}
