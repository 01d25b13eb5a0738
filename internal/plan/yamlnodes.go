package plan

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// YAML node helpers: positions, errors, and typed reads that name the key.

type kv struct {
	key  string
	k, v *yaml.Node
}

// oneOf finds which of keys f holds, where at most one may be given. Each
// extra key gets its own error, "WHAT has both A and B: expected EXPECTED",
// and the first one given wins so parsing can go on to report more. Nil
// when none is there; what that means is for the caller to say.
func (p *parser) oneOf(f map[string]kv, keys []string, what, expected string) *kv {
	var first *kv
	for _, k := range keys {
		e, ok := f[k]
		if !ok {
			continue
		}
		if first != nil {
			p.errf(e.k, "%s has both %s and %s: expected %s", what, first.key, k, expected)
			continue
		}
		first = &e
	}
	return first
}

// deref follows aliases so *anchors work everywhere. The hop limit guards
// against alias chains the parser should never produce.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 8 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && (n.Value == "" || n.Value == "~" || strings.EqualFold(n.Value, "null"))
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return q(n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (p *parser) pos(n *yaml.Node) Pos {
	return Pos{File: p.file, Line: n.Line, Col: n.Column}
}

func (p *parser) errAt(pos Pos, format string, args ...any) {
	p.probs = append(p.probs, Problem{Pos: pos, Msg: p.hideEnv(sprintf(format, args...))})
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.errAt(p.pos(n), format, args...)
}

// posIn points inside a single-line scalar when the decoded value matches
// the text on its line; for anything else (escapes, folded lines, block
// scalars) it falls back to the scalar's own position.
func (p *parser) posIn(n *yaml.Node, value string, off int) Pos {
	pos := p.pos(n)
	if off <= 0 || off > len(value) || n.Line < 1 {
		return pos
	}
	if p.lines == nil {
		p.lines = bytes.Split(p.src, []byte("\n"))
	}
	if n.Line > len(p.lines) {
		return pos
	}
	line := p.lines[n.Line-1]
	b := 0
	for c := 1; c < n.Column && b < len(line); c++ {
		_, size := utf8.DecodeRune(line[b:])
		b += size
	}
	quote := 0
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		quote = 1
	}
	if b+quote <= len(line) && bytes.HasPrefix(line[b+quote:], []byte(value[:off])) {
		pos.Col += quote + utf8.RuneCountInString(value[:off])
	}
	return pos
}

// spend takes n entries from the entry budget, reporting once when it runs
// out; reading then stops, and the plan fails.
func (p *parser) spend(n *yaml.Node, count int) bool {
	if p.entries < 0 {
		return false
	}
	p.entries -= count
	if p.entries < 0 {
		p.errf(n, "plan too large: aliases expand it to more than %d entries", entryBudget)
		return false
	}
	return true
}

// mapping lists a mapping's entries in file order, rejecting duplicate and
// non-scalar keys. A null value (key with nothing after it) counts as an
// empty mapping.
func (p *parser) mapping(n *yaml.Node, what string) ([]kv, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "bad %s: expected a mapping, found %s", what, kindName(n))
		return nil, false
	}
	if !p.spend(n, len(n.Content)/2) {
		return nil, false
	}
	var out []kv
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errf(k, "bad key in %s: expected a name, found %s", what, kindName(k))
			continue
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			p.errf(k, "merge keys (<<) are not supported in %s: repeat the keys or use an alias for the whole value", what)
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.errf(k, "duplicate key %s in %s (first at line %d)", q(k.Value), what, line)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, kv{key: k.Value, k: k, v: v})
	}
	return out, true
}

// fields is mapping for a fixed set of keys: unknown keys are reported with
// the likely intended key.
func (p *parser) fields(n *yaml.Node, what string, valid []string) map[string]kv {
	list, _ := p.mapping(n, what)
	out := make(map[string]kv, len(list))
	for _, e := range list {
		known := false
		for _, v := range valid {
			if e.key == v {
				known = true
				break
			}
		}
		if !known {
			if s := Suggest(e.key, valid); s != "" {
				if p.hinted == nil {
					p.hinted = map[*yaml.Node]map[string]bool{}
				}
				if p.hinted[deref(n)] == nil {
					p.hinted[deref(n)] = map[string]bool{}
				}
				p.hinted[deref(n)][s] = true
				p.errf(e.k, "unknown key %s in %s: did you mean %s?", q(e.key), what, q(s))
			} else {
				p.errf(e.k, "unknown key %s in %s: expected one of %s", q(e.key), what, strings.Join(valid, ", "))
			}
			continue
		}
		out[e.key] = e
	}
	return out
}

// missing reports whether a required key should be reported as missing:
// not when an unknown key was already taken for it.
func (p *parser) missing(n *yaml.Node, key string) bool {
	return !p.hinted[deref(n)][key]
}

// text is a scalar's value with ${ENV} expanded; ok is false after
// reporting a problem.
func (p *parser) text(n *yaml.Node, what string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode {
		p.errf(n, "bad %s: expected a single value, found %s", what, kindName(n))
		return "", false
	}
	if isNull(n) {
		return "", true
	}
	s, msg, off := expandEnv(n.Value, p.lookup)
	if msg != "" {
		p.errAt(p.posIn(n, n.Value, off), "%s", msg)
		return "", false
	}
	return s, true
}

func (p *parser) intMin(n *yaml.Node, what string, lo int) (int, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < lo {
		p.errf(n, "bad %s %s: expected a whole number of at least %d", what, q(s), lo)
		return 0, false
	}
	return v, true
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	p.errf(n, "bad %s %s: expected true or false", what, q(s))
	return false, false
}

func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	// A bare number other than 0 has no unit, and guessing one is how
	// a 30-minute test ends up running for 30 seconds.
	return d, err == nil
}

// duration parses a duration that must be above zero, or zero or above.
func (p *parser) duration(n *yaml.Node, what string, zeroOK bool) (time.Duration, bool) {
	s, ok := p.text(n, what)
	if !ok {
		return 0, false
	}
	d, ok := parseDuration(s)
	if !ok {
		p.errf(n, "bad duration %s: expected a number with a unit such as 500ms, 30s, 2m", q(s))
		return 0, false
	}
	switch {
	case d < 0:
		p.errf(n, "bad %s %s: expected a duration of zero or more", what, q(s))
		return 0, false
	case d == 0 && !zeroOK:
		p.errf(n, "bad %s %s: expected a duration above zero", what, q(s))
		return 0, false
	}
	return d, true
}

func (p *parser) list(n *yaml.Node, what string) ([]*yaml.Node, bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "bad %s: expected a list, found %s", what, kindName(n))
		return nil, false
	}
	if !p.spend(n, len(n.Content)) {
		return nil, false
	}
	return n.Content, true
}
