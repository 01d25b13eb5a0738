package plan

import (
	"strconv"
	"strings"
)

// expandEnv substitutes ${NAME} and ${NAME:-default} in a scalar. It works
// on decoded scalar values rather than on the file text so positions stay
// true and a value can never break the YAML around it. As in a shell, the
// default also applies when the variable is set but empty; $${ escapes a
// literal ${. On failure it returns the problem and the byte offset of the
// reference that caused it.
func expandEnv(s string, lookup func(string) (string, bool)) (string, string, int) {
	if !strings.Contains(s, "${") {
		return s, "", 0
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", "unterminated environment reference " + q(s[i:]) + ": expected ${NAME} or ${NAME:-default} (write $${ for a literal ${)", i
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !isEnvName(name) {
			return "", "bad environment reference " + q("${"+ref+"}") + ": expected ${NAME} or ${NAME:-default} with NAME made of letters, digits and _", i
		}
		v, ok := "", false
		if lookup != nil {
			v, ok = lookup(name)
		}
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", "environment variable " + name + " is not set: set it or write ${" + name + ":-default}", i
		}
		b.WriteString(v)
		i += 2 + end + 1
	}
	return b.String(), "", 0
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// clip shortens text quoted in an error message so that one bad line cannot
// flood the terminal.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// q quotes text for an error message, clipped and with control characters
// escaped so the message stays on one line.
func q(s string) string { return strconv.Quote(clip(s)) }
