package plan

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/stampede-load/stampede/internal/plan/lang"
)

// zeroEnv lets a caller render a template that needs no user state (a static
// header, say) without building an Env.
var zeroEnv Env

// Append renders the template onto dst. It runs on the hot path, once per
// request per templated field, so it only appends: no intermediate strings,
// no fmt, no net/url. An Env that does not match the plan (too few captures
// or rows) renders the missing values as empty rather than panicking.
func (t *Template) Append(dst []byte, env *Env) []byte {
	if t == nil {
		return dst
	}
	if env == nil {
		env = &zeroEnv
	}
	for i := range t.Parts {
		p := &t.Parts[i]
		switch p.Kind {
		case PartLiteral:
			dst = append(dst, p.Literal...)
		case PartCapture:
			if p.Index >= 0 && p.Index < len(env.Captures) {
				dst = appendEscaped(dst, env.Captures[p.Index], p.Escape)
			}
		case PartData:
			if p.Index >= 0 && p.Index < len(env.Rows) {
				row := env.Rows[p.Index]
				if p.Column >= 0 && p.Column < len(row) {
					dst = appendEscaped(dst, row[p.Column], p.Escape)
				}
			}
		case PartTenant:
			dst = strconv.AppendInt(dst, int64(env.Tenant), 10)
		case PartVU:
			dst = strconv.AppendInt(dst, env.VU, 10)
		case PartIteration:
			dst = strconv.AppendInt(dst, env.Iter, 10)
		case PartUUID:
			dst = lang.AppendUUID(dst, uint64Of(env), uint64Of(env))
		case PartRandInt:
			dst = strconv.AppendInt(dst, randInt(env, p.Min, p.Max), 10)
		case PartUnixMilli:
			dst = strconv.AppendInt(dst, time.Now().UnixMilli(), 10)
		case PartGlobal:
			if p.Index >= 0 && p.Index < len(env.Globals) {
				dst = appendEscaped(dst, env.Globals[p.Index], p.Escape)
			}
		case PartExpr:
			dst = appendExpr(dst, p, env)
		}
	}
	return dst
}

// String renders the template for callers off the hot path.
func (t *Template) String(env *Env) string {
	return string(t.Append(nil, env))
}

// uint64Of draws from the user's generator so runs can be seeded, and from
// the shared one when the caller has none.
func uint64Of(env *Env) uint64 {
	if env.Rand != nil {
		return env.Rand.Uint64()
	}
	return rand.Uint64()
}

// randInt returns a uniform integer in [lo, hi], also when the span does not
// fit an int64 (rand_int(-9e18, 9e18)), where Int64N cannot be used.
func randInt(env *Env, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	span := uint64(hi-lo) + 1 // wraps to 0 for the full int64 range
	if span != 0 && span <= math.MaxInt64 {
		if env.Rand != nil {
			return lo + env.Rand.Int64N(int64(span))
		}
		return lo + rand.Int64N(int64(span))
	}
	v := uint64Of(env)
	if span != 0 {
		v %= span // bias below 2^-1 only in this absurd range; not worth a loop
	}
	return lo + int64(v)
}

const hexDigits = "0123456789abcdef"

func appendEscaped(dst []byte, s string, e Escape) []byte {
	switch e {
	case EscapeJSON:
		return appendJSONEscaped(dst, s)
	case EscapeQuery:
		return appendURLEscaped(dst, s, true)
	case EscapePath:
		return appendURLEscaped(dst, s, false)
	}
	return append(dst, s...)
}

// appendJSONEscaped writes s as the inside of a JSON string. Invalid UTF-8
// becomes U+FFFD, as encoding/json does, so the body stays valid JSON
// whatever a CSV file or a response held.
func appendJSONEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c >= 0x20:
				dst = append(dst, c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// appendURLEscaped matches url.QueryEscape (query) or url.PathEscape (path
// segment) byte for byte, without their allocations.
func appendURLEscaped(dst []byte, s string, query bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case query && c == ' ':
			dst = append(dst, '+')
		case !query && (c == '$' || c == '&' || c == '+' || c == ':' || c == '=' || c == '@'):
			dst = append(dst, c)
		default:
			dst = append(dst, '%', "0123456789ABCDEF"[c>>4], "0123456789ABCDEF"[c&0xf])
		}
	}
	return dst
}
