package plan

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// sentSecrets are credentials the run learns as it goes: the values it
// sent in Authorization, Cookie or a header the plan marks secret, the
// captures that feed them and the cookies servers set. A server that
// echoes a request on an error page (debug pages, many 401 and 403 pages)
// would otherwise put a captured token into every message, sample and
// report. Redact hides them with the environment's values.
//
// Values are looked up by their first minSecret bytes, so Redact costs one
// map probe per byte of a message however many tokens the run saw (one per
// user is common). The set holds two generations of at most
// maxSentSecrets values: the oldest are forgotten first, and a value is
// noted before the request that carries it is sent, so an echo in its
// answer is always found.
type sentSecrets struct {
	mu       sync.RWMutex
	cur, old map[string][]string // first minSecret bytes → forms, longest first
	n        int                 // values in cur
	limit    int                 // values per generation: maxSentSecrets
	seen     sync.Map            // value → struct{}: already noted (cur or old)
}

// minCookieSecret is the shortest cookie value noted on its own.
const minCookieSecret = 8

// maxSentSecrets bounds one generation: 65,536 tokens of ~200 bytes and
// their forms are some tens of MB at most.
const maxSentSecrets = 1 << 16

// NoteSecret makes Redact hide v from now on. Safe for concurrent use;
// noting a known value again costs one lookup.
func (pl *Plan) NoteSecret(v string) {
	if pl == nil || pl.sent == nil || len(v) < minSecret {
		return
	}
	if _, ok := pl.sent.seen.Load(v); ok {
		return
	}
	pl.sent.add(v)
}

// NoteSecretHeader notes the credentials in a header value the run sent or
// received: the whole value and the parts a server may echo alone (the
// token after "Bearer ", a Basic password, each cookie's value).
func (pl *Plan) NoteSecretHeader(name, v string) {
	if pl == nil || pl.sent == nil || len(v) < minSecret {
		return
	}
	if _, ok := pl.sent.seen.Load(v); ok {
		return
	}
	for _, part := range secretParts(name, v) {
		pl.NoteSecret(part)
	}
	pl.sent.add(v)
}

// secretParts are the pieces of a credential header a server can echo on
// their own.
func secretParts(name, v string) []string {
	var parts []string
	switch strings.ToLower(name) {
	case "cookie", "set-cookie":
		pairs := v
		if strings.EqualFold(name, "set-cookie") {
			pairs, _, _ = strings.Cut(v, ";") // attributes are no secret
		}
		for _, kv := range strings.Split(pairs, ";") {
			_, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
			// A short cookie value is a preference (lang=en-US, dark=true),
			// and hiding every "true" would garble messages; a session's
			// is long.
			if val = strings.Trim(val, `"`); ok && len(val) >= minCookieSecret {
				parts = append(parts, val)
			}
		}
	default:
		scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
		if !ok {
			break
		}
		cred = strings.TrimSpace(cred)
		parts = append(parts, cred)
		if strings.EqualFold(scheme, "Basic") {
			if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
				parts = append(parts, string(dec))
				if _, pass, ok := strings.Cut(string(dec), ":"); ok {
					parts = append(parts, pass)
				}
			}
		}
	}
	return parts
}

func (s *sentSecrets) add(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen.Load(v); ok {
		return
	}
	if s.n >= s.limit {
		for k := range s.old {
			for _, f := range s.old[k] {
				s.seen.Delete(f)
			}
		}
		s.old, s.cur, s.n = s.cur, map[string][]string{}, 0
	}
	if s.cur == nil {
		s.cur = map[string][]string{}
	}
	s.n++
	s.seen.Store(v, struct{}{})
	for _, f := range secretForms(v) {
		k := f[:minSecret]
		list := append(s.cur[k], f)
		// Longest first, so a secret that contains another is hidden whole.
		for i := len(list) - 1; i > 0 && len(list[i]) > len(list[i-1]); i-- {
			list[i], list[i-1] = list[i-1], list[i]
		}
		s.cur[k] = list
	}
}

// secretForms are v as messages carry it: as is, escaped inside a quoted
// (JSON or Go) string, as the common JSON encoders escape it, URL-escaped,
// and on one line.
func secretForms(v string) []string {
	quoted := strconv.Quote(v)
	oneLine := strings.Join(strings.Fields(v), " ")
	var out []string
	for _, f := range []string{
		v, quoted[1 : len(quoted)-1],
		jsonString(v, phpEscape), jsonString(v, aspNetEscape), jsonString(v, goEscape),
		url.QueryEscape(v), url.PathEscape(v), oneLine,
	} {
		if len(f) < minSecret {
			continue
		}
		dup := false
		for _, o := range out {
			dup = dup || o == f
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

// The JSON encoders of common servers escape more than '"' and '\\', and a
// token echoed in their answers (base64 holds '+' and '/') must be found in
// their forms. PHP's json_encode writes '/' as "\/"; ASP.NET's
// System.Text.Json writes HTML-sensitive characters and '+' as upper-case
// \u escapes ('"' too); Go's encoding/json writes < > & as lower-case ones.
func phpEscape(c byte) string {
	if c == '/' {
		return `\/`
	}
	return ""
}

func aspNetEscape(c byte) string {
	switch c {
	case '"', '+', '<', '>', '&', '\'', '`':
		return fmt.Sprintf(`\u%04X`, c)
	}
	return ""
}

func goEscape(c byte) string {
	switch c {
	case '<', '>', '&':
		return fmt.Sprintf(`\u%04x`, c)
	}
	return ""
}

// jsonString is v inside a JSON string as an encoder that escapes the
// bytes escape names (beyond '"', '\\' and control bytes) writes it.
func jsonString(v string, escape func(byte) string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if e := escape(c); e != "" {
			b.WriteString(e)
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// redact hides every noted value in s, and the start of one that a
// shortened message (ending in cutMark) was cut inside.
func (s *sentSecrets) redact(text string) string {
	if s == nil || len(text) < minSecret {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.n == 0 && len(s.old) == 0 {
		return text
	}
	body, cut := strings.CutSuffix(text, cutMark)
	var b strings.Builder
	last := 0
	for i := 0; i+minSecret <= len(body); {
		if f := s.match(body[i:]); f != "" {
			b.WriteString(body[last:i])
			b.WriteString(Redacted)
			i += len(f)
			last = i
			continue
		}
		if cut && s.cutInside(body[i:]) {
			b.WriteString(body[last:i])
			b.WriteString(Redacted)
			last = len(body)
			break
		}
		i++
	}
	if last == 0 {
		return text
	}
	b.WriteString(body[last:])
	if cut {
		b.WriteString(cutMark)
	}
	return b.String()
}

// match returns the longest noted form s starts with, or "".
func (s *sentSecrets) match(t string) string {
	k := t[:minSecret]
	for _, gen := range []map[string][]string{s.cur, s.old} {
		for _, f := range gen[k] {
			if strings.HasPrefix(t, f) {
				return f
			}
		}
	}
	return ""
}

// cutInside reports whether tail (the end of a shortened message) is the
// start of a noted value.
func (s *sentSecrets) cutInside(tail string) bool {
	k := tail[:minSecret]
	for _, gen := range []map[string][]string{s.cur, s.old} {
		for _, f := range gen[k] {
			if len(f) > len(tail) && strings.HasPrefix(f, tail) {
				return true
			}
		}
	}
	return false
}
