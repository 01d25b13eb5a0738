package plan

import "gopkg.in/yaml.v3"

// httpVersion reads http.version: "http/1.1" (the default) or "h2c".
func (p *parser) httpVersion(n *yaml.Node) bool {
	s, ok := p.text(n, "version")
	if !ok {
		return false
	}
	switch s {
	case "http/1.1", "1.1":
		return false
	case "h2c":
		return true
	}
	msg := "bad http version " + q(s) + ": expected http/1.1 or h2c (HTTP/2 without TLS); https targets negotiate HTTP/2 by themselves"
	if s == "h2" || s == "2" || s == "http/2" {
		msg = "bad http version " + q(s) + ": for HTTP/2 over plain http write h2c; an https target uses HTTP/2 when its server offers it"
	}
	p.errf(n, "%s", msg)
	return false
}
