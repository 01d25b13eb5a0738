package plan

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Headers whose values are credentials whatever the plan says: their
// literal values are hidden from every message, sample and report, and
// the values the run renders into them are noted as it sends them
// (sentsecrets.go). secret_headers adds others (an API key header).
var credentialHeaders = []string{"authorization", "proxy-authorization", "cookie"}

func init() {
	topExtensions = append(topExtensions, topExtension{key: "secret_headers", parse: (*parser).secretHeaders})
}

// secretHeaders reads secret_headers: [X-Api-Key, ...].
func (p *parser) secretHeaders(n *yaml.Node) {
	items, ok := p.list(n, "secret_headers")
	if !ok {
		return
	}
	for _, it := range items {
		name, ok := p.text(it, "secret header")
		if !ok {
			continue
		}
		if !isToken(name) {
			p.errf(it, "bad secret header %s: expected a header name (letters, digits and !#$%%&'*+-.^_`|~)", q(name))
			continue
		}
		p.plan.SecretHeaders = append(p.plan.SecretHeaders, strings.ToLower(name))
	}
}

// IsSecretHeader reports whether a header's values are credentials: one
// of Authorization, Proxy-Authorization, Cookie, or a secret_headers name.
func (pl *Plan) IsSecretHeader(name string) bool {
	for _, h := range credentialHeaders {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	if pl == nil {
		return false
	}
	for _, h := range pl.SecretHeaders {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return false
}

// finishSecretHeaders makes the literal credentials of the plan's headers
// secrets (so plan.source and every echo of them are redacted) and marks
// the captures that feed a secret header secret, so a token is hidden
// from the moment it is captured, before it is first sent.
func (p *parser) finishSecretHeaders() {
	pl := p.plan
	pl.sent = &sentSecrets{limit: maxSentSecrets}
	scenarios := append([]*Scenario{}, pl.Scenarios...)
	if pl.Setup != nil {
		scenarios = append(scenarios, pl.Setup)
	}
	if pl.Teardown != nil {
		scenarios = append(scenarios, pl.Teardown)
	}
	globals := map[int]bool{}
	p.noteHeaders(pl.Defaults.Headers, nil, globals)
	for _, s := range scenarios {
		slots := map[int]bool{}
		for _, st := range s.Steps {
			p.noteHeaders(st.Headers, slots, globals)
		}
		if c := s.Connection.Spec(); c != nil {
			switch {
			case c.SignalR != nil:
				p.secret(c.SignalR.AccessToken)
				p.noteHeaders(c.SignalR.Headers, slots, globals)
			case c.WebSocket != nil:
				p.noteHeaders(c.WebSocket.Headers, slots, globals)
			}
		}
		markCaptures(s, slots)
	}
	if pl.Setup != nil {
		markCaptures(pl.Setup, globals)
	}
}

// noteHeaders notes the secret headers' literal text and the capture
// slots (and setup captures) their templates read.
func (p *parser) noteHeaders(hs []Header, slots, globals map[int]bool) {
	for _, h := range hs {
		if !p.plan.IsSecretHeader(h.Name) || h.Value == nil {
			continue
		}
		if h.Value.Static() {
			// Only a whole literal value is a credential: the literal
			// parts of a template ("Bearer ") are not, and the rendered
			// value is noted as it is sent.
			var b strings.Builder
			for _, part := range h.Value.Parts {
				b.WriteString(part.Literal)
			}
			v := b.String()
			p.secret(v)
			for _, part := range secretParts(h.Name, v) {
				p.secret(part)
			}
			continue
		}
		for _, part := range h.Value.Parts {
			switch part.Kind {
			case PartCapture:
				if slots != nil {
					slots[part.Index] = true
				}
			case PartGlobal:
				globals[part.Index] = true
			}
		}
	}
}

func markCaptures(s *Scenario, slots map[int]bool) {
	for _, st := range s.Steps {
		for i := range st.Captures {
			if slots[st.Captures[i].Slot] {
				st.Captures[i].Secret = true
			}
		}
	}
}
