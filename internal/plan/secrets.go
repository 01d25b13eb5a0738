package plan

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Redacted replaces text that came from the environment, or a password
// from the target URL, wherever the engine records a message.
const Redacted = "[redacted]"

// minSecret is the shortest environment value Redact hides: shorter ones
// (a port, a user count, "true") are everywhere in ordinary messages, and
// hiding every "10" would make them unreadable while protecting nothing.
const minSecret = 4

// Redact hides in s every value that came from the environment (${NAME})
// and the target URL's password, as written and in the quoted and
// URL-escaped forms that error messages carry. Anything that records text
// which may echo a request or an expectation (error samples, failure
// tables, logs) passes it through Redact first. It is safe for concurrent
// use and cheap on a plan without secrets.
func (pl *Plan) Redact(s string) string {
	if pl == nil {
		return s
	}
	for _, v := range pl.redactForms {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Redacted)
		}
	}
	return pl.sent.redact(pl.redactCutTail(s))
}

// cutMark ends a message that was shortened to fit (the failure tables'
// messages, metrics.AppendBody).
const cutMark = "…"

// redactCutTail hides the start of a secret that a shortened message was
// cut inside: "bad token eyJhbGciOi…" keeps no part of the token. Only a
// piece of minSecret bytes or more counts, as for whole secrets.
func (pl *Plan) redactCutTail(s string) string {
	body, cut := strings.CutSuffix(s, cutMark)
	if !cut {
		return s
	}
	for _, v := range pl.redactForms {
		for n := min(len(v)-1, len(body)); n >= minSecret; n-- {
			if strings.HasSuffix(body, v[:n]) {
				return body[:len(body)-n] + Redacted + cutMark
			}
		}
	}
	return s
}

// recordingLookup wraps lookup so every value it hands out is remembered
// as a secret, except while the target is read: the target is shown in
// every summary by design (its password is taken apart and kept secret on
// its own, see target).
func (p *parser) recordingLookup(lookup func(string) (string, bool)) func(string) (string, bool) {
	if lookup == nil {
		return nil
	}
	return func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && !p.readingTarget {
			p.secret(v)
			p.envRef(name, v)
		}
		return v, ok
	}
}

// envRef remembers which reference gave v, so that a plan error quoting
// the expanded text shows ${NAME} instead (hideEnv).
func (p *parser) envRef(name, v string) {
	if len(v) < minSecret {
		return
	}
	if p.envRefs == nil {
		p.envRefs = map[string]string{}
	}
	if _, seen := p.envRefs[v]; !seen {
		p.envRefs[v] = "${" + name + "}"
	}
}

// hideEnv puts back the ${NAME} reference wherever a plan error quotes an
// environment value, whole, escaped as q quotes it, or clipped by q (the
// value's start followed by "..."): docs/reference/plan.md promises that no value from
// the environment reaches a message, and the reference says more to the
// person fixing the plan anyway.
func (p *parser) hideEnv(msg string) string {
	if len(p.envRefs) == 0 {
		return msg
	}
	vals := make([]string, 0, len(p.envRefs))
	for v := range p.envRefs {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		ref := p.envRefs[v]
		quoted := strconv.Quote(v)
		for _, f := range []string{v, quoted[1 : len(quoted)-1]} {
			msg = strings.ReplaceAll(msg, f, ref)
		}
		for n := len(v) - 1; n >= minSecret; n-- {
			msg = strings.ReplaceAll(msg, v[:n]+"...", ref+"...")
		}
	}
	return msg
}

func (p *parser) secret(v string) {
	if len(v) >= minSecret {
		p.secrets = append(p.secrets, v)
	}
}

// finishSecrets computes the forms Redact looks for, longest first so a
// secret that contains another is hidden whole.
func (p *parser) finishSecrets() {
	seen := map[string]bool{}
	var forms []string
	for _, v := range p.secrets {
		// The forms noted values are looked for in (sentsecrets.go):
		// messages are one line with white space collapsed (the failure
		// tables' messages), servers echo values JSON- or URL-escaped.
		for _, f := range secretForms(v) {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	p.plan.redactForms = forms
}

// targetCredentials takes user:password out of the target URL: curl sends
// them as Basic authentication, so stampede does too (finishTarget), and a
// URL without them is what summaries, results and reports show.
func (p *parser) targetCredentials(u *url.URL) {
	if u.User == nil {
		return
	}
	user := u.User.Username()
	pass, _ := u.User.Password()
	token := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	p.secret(pass)
	p.secret(token)
	p.targetAuth = "Basic " + token
	u.User = nil
}

// finishTarget joins relative step URLs to the target's path, as base URLs
// do in k6 and Gatling (/api/v1 + /items/1 = /api/v1/items/1), and sends
// the target's credentials with every request that goes to it. Connection
// URLs are joined to the whole target when a population connects, so they
// only get the credentials here.
func (p *parser) finishTarget() {
	pl := p.plan
	if pl.Target == "" || pl.Target == "demo" {
		return
	}
	path := ""
	if u, err := url.Parse(pl.Target); err == nil {
		path = strings.TrimRight(u.EscapedPath(), "/")
	}
	for _, s := range pl.Scenarios {
		for _, st := range s.Steps {
			if st.Kind != StepRequest || st.URL == nil || !strings.HasPrefix(st.URL.Source, "/") {
				continue
			}
			if path != "" {
				prependLiteral(st.URL, path)
			}
			st.Headers = p.withAuth(st.Headers)
		}
		c := s.Connection.Spec()
		switch {
		case c == nil:
		case c.SignalR != nil && c.SignalR.URL != nil && strings.HasPrefix(c.SignalR.URL.Source, "/"):
			c.SignalR.Headers = p.withAuth(c.SignalR.Headers)
		case c.WebSocket != nil && c.WebSocket.URL != nil && strings.HasPrefix(c.WebSocket.URL.Source, "/"):
			c.WebSocket.Headers = p.withAuth(c.WebSocket.Headers)
		}
	}
}

// withAuth adds the target's Basic authentication unless the headers set
// Authorization themselves, which then wins as a step header wins over a
// default.
func (p *parser) withAuth(hs []Header) []Header {
	if p.targetAuth == "" {
		return hs
	}
	for _, h := range hs {
		if strings.EqualFold(h.Name, "Authorization") {
			return hs
		}
	}
	out := make([]Header, len(hs), len(hs)+1)
	copy(out, hs)
	return append(out, Header{Name: "Authorization", Value: &Template{Source: p.targetAuth, Parts: []Part{{Kind: PartLiteral, Literal: p.targetAuth}}}})
}

func prependLiteral(t *Template, s string) {
	t.Source = s + t.Source
	if len(t.Parts) > 0 && t.Parts[0].Kind == PartLiteral {
		t.Parts[0].Literal = s + t.Parts[0].Literal
		return
	}
	t.Parts = append([]Part{{Kind: PartLiteral, Literal: s}}, t.Parts...)
}

// hasUserinfo reports whether an absolute URL carries user:password@,
// which stampede does not send from a step (only from the target).
func hasUserinfo(u string) bool {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.Contains(rest, "@")
}

// hideUserinfo replaces user:password@ in a URL that may not even parse,
// for an error message.
func hideUserinfo(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	// A password may hold / ? # (a token's base64), so the userinfo ends
	// at the last @ anywhere: hiding too much in a bad URL's message is
	// better than showing a secret.
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return u
	}
	return scheme + "://" + Redacted + rest[at:]
}

// targetText is the target's text with its environment references
// expanded, those in user:password@ percent-escaped: an API token with a
// / or # in it is the password it names, not the end of the URL's
// authority, and a % in it is sent as %.
func (p *parser) targetText(v *yaml.Node) (string, bool) {
	n := deref(v)
	start, end := rawUserinfo(n.Value)
	if n.Kind != yaml.ScalarNode || isNull(n) || end < 0 || !strings.Contains(n.Value[start:end], "${") {
		return p.text(v, "target")
	}
	var b strings.Builder
	escape := func(name string) (string, bool) {
		val, ok := p.lookup(name)
		return userinfoEscape(val), ok
	}
	for _, piece := range []struct {
		from, to int
		lookup   func(string) (string, bool)
	}{{0, start, p.lookup}, {start, end, escape}, {end, len(n.Value), p.lookup}} {
		s, msg, off := expandEnv(n.Value[piece.from:piece.to], piece.lookup)
		if msg != "" {
			p.errAt(p.posIn(n, n.Value, piece.from+off), "%s", msg)
			return "", false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

// rawUserinfo is where user:password lies in a URL's unexpanded text
// (end -1: it has none): after :// and before the last @ ahead of the
// first / ? # outside a ${...} reference.
func rawUserinfo(s string) (start, end int) {
	i := strings.Index(s, "://")
	if i < 0 {
		return 0, -1
	}
	start, end = i+3, -1
	for k := start; k < len(s); k++ {
		switch s[k] {
		case '$':
			if strings.HasPrefix(s[k:], "${") {
				if c := strings.IndexByte(s[k:], '}'); c > 0 {
					k += c
				}
			}
		case '@':
			end = k
		case '/', '?', '#':
			return start, end
		}
	}
	return start, end
}

// userinfoEscape percent-escapes all but the unreserved characters, so a
// value is read back as itself from user:password@.
func userinfoEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
