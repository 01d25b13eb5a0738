package plan

import (
	"slices"
	"strconv"
	"strings"

	"github.com/stampede-load/stampede/internal/plan/lang"
)

// tmplMode says how text lands in the request, which decides how literal
// text is escaped at compile time and how references are escaped at render
// time.
type tmplMode uint8

const (
	modeRaw   tmplMode = iota // headers, raw bodies: as is
	modeJSON                  // inside a JSON string of a json body
	modeQuery                 // a query or form value
	modeURL                   // a request URL: path references as a segment, query references as a value
)

// scope is what a template may refer to at the place it is written.
type scope struct {
	vars    map[string]string
	data    map[string]*DataSource
	tenants bool
	// captures holds the captures of earlier steps; nil where captures
	// cannot exist at all (defaults).
	captures map[string]int
	capOrder []string
	dataUsed map[int]bool
	// globals are the setup's captures (workflow.go), read-only.
	globals map[string]int
	// capAt is where each capture was first declared (declare).
	capAt map[string]Pos
}

// reserved are the bare names a template gives a meaning of its own, so a
// capture cannot take them.
var reserved = map[string]bool{
	"tenant": true, "vu": true, "iter": true, "uuid": true, "now_ms": true,
	"rand_int": true, "vars": true, "data": true,
}

const refHelp = "expected vars.NAME, data.SOURCE.COLUMN, tenant, vu, iter, uuid, now_ms, rand_int(A, B) or the name of an earlier capture"

// builder accumulates template parts, merging adjacent literals so rendering
// does as few appends as possible. The pending literal is a byte buffer, so
// a large static json body is built in linear time.
type builder struct {
	parts   []Part
	pending []byte
}

func (b *builder) lit(s string) {
	b.pending = append(b.pending, s...)
}

func (b *builder) add(p Part) {
	b.flush()
	b.parts = append(b.parts, p)
}

func (b *builder) flush() {
	if len(b.pending) > 0 {
		b.parts = append(b.parts, Part{Kind: PartLiteral, Literal: string(b.pending)})
		b.pending = b.pending[:0]
	}
}

func (b *builder) template(source string) *Template {
	b.flush()
	return &Template{Source: source, Parts: b.parts}
}

// escapeLiteral escapes text written in the plan for where it lands: a JSON
// string needs its quotes escaped, a form value its & and =.
func escapeLiteral(s string, m tmplMode) string {
	switch m {
	case modeJSON:
		return string(appendJSONEscaped(nil, s))
	case modeQuery:
		return string(appendURLEscaped(nil, s, true))
	}
	return s
}

// compileInto parses src and appends its parts to b. On failure it returns
// a message and the byte offset in src it is about.
func compileInto(b *builder, src string, m tmplMode, sc *scope) (string, int) {
	inQuery := false
	refEsc := func() Escape {
		switch m {
		case modeJSON:
			return EscapeJSON
		case modeQuery:
			return EscapeQuery
		case modeURL:
			if inQuery {
				return EscapeQuery
			}
			return EscapePath
		}
		return EscapeNone
	}
	for i := 0; i < len(src); {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			j = len(src) - i
		}
		text := src[i : i+j]
		if m == modeURL && strings.ContainsRune(text, '?') {
			inQuery = true
		}
		b.lit(escapeLiteral(text, m))
		i += j
		if i >= len(src) {
			break
		}
		end := strings.Index(src[i+2:], "}}")
		if end < 0 {
			return "unterminated template reference " + q(src[i:]) + `: expected "}}" to close "{{"`, i
		}
		expr := strings.TrimSpace(src[i+2 : i+2+end])
		if msg := sc.ref(b, expr, refEsc()); msg != "" {
			return msg, i
		}
		i += 2 + end + 2
	}
	return "", 0
}

// ref compiles one {{ expr }} onto b, or says what is wrong with it.
func (sc *scope) ref(b *builder, expr string, esc Escape) string {
	shown := q("{{ " + expr + " }}")
	switch {
	case expr == "":
		return "empty template reference \"{{ }}\": " + refHelp
	case strings.HasPrefix(expr, "vars."):
		return sc.varRef(b, expr[len("vars."):], esc)
	case strings.HasPrefix(expr, "data."):
		return sc.dataRef(b, expr[len("data."):], shown, esc)
	case expr == "tenant":
		if !sc.tenants {
			return "{{ tenant }} needs a tenant pool: add tenants: {count: N} to the plan"
		}
		b.add(Part{Kind: PartTenant, Escape: esc})
		return ""
	case expr == "vu":
		b.add(Part{Kind: PartVU, Escape: esc})
		return ""
	case expr == "iter":
		b.add(Part{Kind: PartIteration, Escape: esc})
		return ""
	case expr == "uuid":
		b.add(Part{Kind: PartUUID, Escape: esc})
		return ""
	case expr == "now_ms":
		b.add(Part{Kind: PartUnixMilli, Escape: esc})
		return ""
	case isRandInt(expr):
		lo, hi, ok := parseRandInt(expr)
		if !ok {
			return "bad template reference " + shown + ": expected rand_int(A, B) with whole numbers A <= B"
		}
		b.add(Part{Kind: PartRandInt, Min: lo, Max: hi, Escape: esc})
		return ""
	case isIdent(expr):
		return sc.nameRef(b, expr, esc)
	}
	// Anything else that parses is an expression (expr.go), checked here
	// at load.
	if !lang.IsSyntax(expr) {
		return "bad template reference " + shown + ": " + refHelp
	}
	e, msg, _ := compileExpr(expr, sc, false)
	if msg != "" {
		return "bad template reference " + shown + ": " + strings.TrimPrefix(msg, "bad expression "+q(expr)+": ")
	}
	b.add(Part{Kind: PartExpr, Expr: e, Escape: esc})
	return ""
}

// varRef compiles {{ vars.NAME }}. Vars are constants, so they are
// escaped once here instead of on every request.
func (sc *scope) varRef(b *builder, name string, esc Escape) string {
	v, ok := sc.vars[name]
	if !ok {
		return lang.UnknownVar(name, sc.vars)
	}
	b.lit(string(appendEscaped(nil, v, esc)))
	return ""
}

// dataRef compiles {{ data.SOURCE.COLUMN }}; ref is what follows "data.".
func (sc *scope) dataRef(b *builder, ref, shown string, esc Escape) string {
	src, col, _ := strings.Cut(ref, ".")
	ds, ok := sc.data[src]
	if !ok {
		return lang.UnknownData(src, sc.data)
	}
	if col == "" {
		return "bad data reference " + shown + ": expected data." + src + ".COLUMN"
	}
	idx := slices.Index(ds.Columns, col)
	// A source whose file failed to load has no columns; its own error
	// already explains, so do not pile a second one on every use.
	if idx < 0 && ds.Columns != nil {
		return "data source " + q(src) + " has no column " + q(col) + ": its columns are " + strings.Join(ds.Columns, ", ")
	}
	idx = max(idx, 0)
	if sc.dataUsed != nil {
		sc.dataUsed[ds.Index] = true
	}
	b.add(Part{Kind: PartData, Index: ds.Index, Column: idx, Escape: esc})
	return ""
}

// nameRef compiles {{ NAME }}: a capture of an earlier step, else a
// global.
func (sc *scope) nameRef(b *builder, name string, esc Escape) string {
	slot, ok := sc.captures[name]
	if g, isGlobal := sc.globals[name]; !ok && isGlobal {
		b.add(Part{Kind: PartGlobal, Index: g, Escape: esc})
		return ""
	}
	if !ok {
		if sc.captures == nil {
			return "unknown capture " + q(name) + ": defaults cannot use captures; " + refHelp
		}
		so := "none"
		if len(sc.capOrder) > 0 {
			so = strings.Join(sc.capOrder, ", ")
		}
		return "unknown capture " + q(name) + ": no earlier step captures it (captures so far: " + so + ")"
	}
	b.add(Part{Kind: PartCapture, Index: slot, Escape: esc})
	return ""
}

// isRandInt says expr calls rand_int, or names it bare (an error): a name
// that only begins with it, as a capture rand_int_x may, is that name.
func isRandInt(expr string) bool {
	rest, ok := strings.CutPrefix(expr, "rand_int")
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	return rest == "" || strings.HasPrefix(rest, "(")
}

func parseRandInt(expr string) (int64, int64, bool) {
	rest := strings.TrimSpace(strings.TrimPrefix(expr, "rand_int"))
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(rest[1:len(rest)-1], ",")
	if !ok {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	hi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || lo > hi {
		return 0, 0, false
	}
	return lo, hi, true
}

// isIdent accepts the names a template can refer to bare: letters, digits,
// _ and -, not starting with a digit or -.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && (c == '-' || '0' <= c && c <= '9') {
			continue
		}
		return false
	}
	return true
}
