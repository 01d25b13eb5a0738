package plan

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/stampede-load/stampede/internal/plan/lang"
)

// StepScript is a step that runs a JavaScript function (script.go). Its
// value is set apart from the iota kinds of types.go so that kinds added
// there never collide with it.
const StepScript StepKind = 16

// Script is a script step's function, compiled once at load; the engine
// runs it on pooled runtimes (package vu), never one per user.
type Script struct {
	// Source is the function body as written.
	Source  string
	Program *lang.Program
	// Captures are the capture slots the script reads by name: those of
	// earlier steps and its own sets.
	Captures map[string]int
	// Globals are the setup's captures by name (slots of Env.Globals),
	// read-only as in templates.
	Globals map[string]int
	// Sets are the slots set(name, value) may write, by name.
	Sets map[string]int
	// AfterRequest is false when no request step comes before the script
	// in its scenario: it then sees no response (status 0).
	AfterRequest bool
	// Pos is where the source's first character is in the plan, and
	// Block is true when the source is a literal block scalar (|), whose
	// lines are the plan's lines from Pos.Line on, indented by Pos.Col-1.
	Pos   Pos
	Block bool
	// raw is the plan's text from rawAt on, where the value's text
	// starts (after a folded scalar's leading blank lines, which are the
	// value's leading line breaks), and quote the scalar's quote (0:
	// plain or folded), for mapping a place in a folded or quoted scalar
	// (whose lines YAML joined) back to the plan (rawPos).
	raw   []byte
	rawAt Pos
	quote byte
}

// scriptPrefix wraps a script's body in a function; the body starts on
// the wrapper's second line, so script line N is JavaScript line N+1.
const scriptPrefix = "(function (captures, vars, response) {\n"

// scriptStep compiles {script: BODY, name, group, sets: [NAMES]}.
func (p *parser) scriptStep(n *yaml.Node, sc *scope) *Step {
	f := p.fields(n, "script step", []string{"script", "name", "group", "sets"})
	st := &Step{Kind: StepScript, Pos: p.pos(n), Name: "script (line " + strconv.Itoa(n.Line) + ")"}
	if e, ok := f["name"]; ok {
		if s, ok := p.text(e.v, "name"); ok && s != "" {
			st.Name = s
		}
	}
	if e, ok := f["group"]; ok {
		st.Group, _ = p.text(e.v, "group")
	}
	e := f["script"]
	v := deref(e.v)
	if v.Kind != yaml.ScalarNode || isNull(v) || strings.TrimSpace(v.Value) == "" {
		p.errf(v, "bad script: expected the body of a JavaScript function, such as set(\"sig\", sha256(response.body))")
		return nil
	}
	// ${ENV} is left alone: in JavaScript it is template-literal syntax.
	s := &Script{Source: v.Value, Captures: map[string]int{}, Sets: map[string]int{}}
	s.Pos, s.Block = p.scriptStart(v)
	s.raw, s.rawAt, s.quote = p.scriptRaw(v, s.Pos)
	for name, slot := range sc.captures {
		s.Captures[name] = slot
	}
	// The setup's captures are read as in templates; loading refuses a
	// capture that takes one's name, so the two never overlap.
	s.Globals = sc.globals
	good := true
	if e, ok := f["sets"]; ok {
		items, _ := p.list(e.v, "sets")
		for _, it := range items {
			name, ok := p.text(it, "sets")
			switch {
			case !ok:
				good = false
				continue
			case !isIdent(name):
				p.errf(it, "bad capture name %s: expected letters, digits, _ and -, not starting with a digit", q(name))
				good = false
				continue
			case reserved[name]:
				p.errf(it, "bad capture name %s: %s are reserved in templates", q(name), reservedHelp)
				good = false
				continue
			}
			slot := p.declare(sc, name, it) // workflow.go
			s.Sets[name], s.Captures[name] = slot, slot
		}
	}
	prog, pos, msg := compileScript(p.file, s.Source)
	if msg != "" {
		if s.pastEnd(pos) {
			// The parser met the wrapper's closing "})": the script
			// ended in the middle of something.
			msg = "unexpected end of the script: is a closing bracket or an operand missing?"
		}
		p.errAt(s.at(pos), "script: %s", msg)
		return nil
	}
	if !good {
		return nil
	}
	s.Program = prog
	st.Script = s
	return st
}

// compileScript compiles a function body in strict mode (a misspelt
// variable is then an error, not a new global). On failure it returns
// where in the body the error is, as 1-based line and column.
func compileScript(file, body string) (*lang.Program, [2]int, string) {
	prog, at, msg := lang.CompileScript(file, scriptPrefix+body+"\n})")
	if at != ([2]int{}) {
		at[0]-- // the body starts on the wrapper's second line
	}
	return prog, at, msg
}

// scriptStart finds where a script's text begins in the plan.
func (p *parser) scriptStart(v *yaml.Node) (Pos, bool) {
	pos := p.pos(v)
	if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			pos.Col++
		}
		return pos, false
	}
	// A block scalar's text starts on the line after its indicator, at
	// the indentation of its first line that has any text.
	if p.lines == nil {
		p.lines = bytes.Split(p.src, []byte("\n"))
	}
	for l := v.Line; l < len(p.lines); l++ {
		line := p.lines[l]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return Pos{File: p.file, Line: v.Line + 1, Col: len(line) - len(bytes.TrimLeft(line, " ")) + 1}, v.Style&yaml.LiteralStyle != 0
	}
	return pos, false
}

// scriptRaw is the plan's text from where the script's value's text
// starts, and that place.
func (p *parser) scriptRaw(v *yaml.Node, at Pos) ([]byte, Pos, byte) {
	if p.lines == nil {
		p.lines = bytes.Split(p.src, []byte("\n"))
	}
	if v.Style&yaml.FoldedStyle != 0 {
		for l := at.Line - 1; l < len(p.lines) && len(bytes.TrimSpace(p.lines[l])) == 0; l++ {
			at.Line++
		}
	}
	off := 0
	for l := 0; l < at.Line-1 && l < len(p.lines); l++ {
		off += len(p.lines[l]) + 1
	}
	off = min(off+at.Col-1, len(p.src))
	var quote byte
	switch {
	case v.Style&yaml.DoubleQuotedStyle != 0:
		quote = '"'
	case v.Style&yaml.SingleQuotedStyle != 0:
		quote = '\''
	}
	return p.src[off:], at, quote
}

// bodyLines are the script's lines, less the line break that ends it.
func (s *Script) bodyLines() []string {
	return strings.Split(strings.TrimRight(s.Source, "\n"), "\n")
}

// pastEnd says a place the parser reported lies after the script's text,
// in the wrapper compileScript closes it with.
func (s *Script) pastEnd(lc [2]int) bool {
	lines := s.bodyLines()
	return lc[0] > len(lines) || lc[0] == len(lines) && lc[1] > len(lines[len(lines)-1])+1
}

// at maps a line and column of the script's body to the plan file. A
// place past the body's end (the parser reached the wrapper) is the end
// of its last line.
func (s *Script) at(lc [2]int) Pos {
	line, col := lc[0], lc[1]
	pos := s.Pos
	if line < 1 {
		return pos
	}
	lines := s.bodyLines()
	if s.pastEnd(lc) {
		line = len(lines)
		col = len(lines[line-1]) + 1
	}
	col = max(col, 1)
	if s.Block {
		return Pos{File: pos.File, Line: pos.Line + line - 1, Col: pos.Col + col - 1}
	}
	off := col - 1
	for _, l := range lines[:line-1] {
		off += len(l) + 1
	}
	return s.rawPos(off)
}

// rawPos finds the byte at off of a folded or quoted scalar's value in
// the plan's text, undoing what YAML did to it: line breaks folded into a
// space (or into line breaks, one per blank line), indentation and
// trailing blanks dropped, escapes and doubled quotes decoded.
func (s *Script) rawPos(off int) Pos {
	val, raw := s.Source, s.raw
	if lead := s.rawAt.Line - s.Pos.Line; lead > 0 {
		// A folded scalar's leading blank lines, one line break each.
		if off < lead {
			return Pos{File: s.Pos.File, Line: s.Pos.Line + off, Col: 1}
		}
		val, off = val[min(lead, len(val)):], off-lead
	}
	i, j := 0, 0
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	for i < off && i < len(val) && j < len(raw) {
		// Blanks that end a line are not in the value.
		k := j
		for k < len(raw) && blank(raw[k]) {
			k++
		}
		if k < len(raw) && (raw[k] == '\n' || raw[k] == '\r') && (k > j || val[i] != raw[j]) {
			j = k
		}
		switch c := raw[j]; {
		case c == '\n' || c == '\r':
			// A break and the blank lines after it: one space, or one
			// line break per blank line.
			empty := -1
			for j < len(raw) && (raw[j] == '\n' || raw[j] == '\r' || blank(raw[j])) {
				if raw[j] == '\n' {
					empty++
				}
				j++
			}
			i += max(empty, 1)
		case s.quote == '"' && c == '\\' && j+1 < len(raw):
			j++
			if raw[j] == '\n' || raw[j] == '\r' {
				// An escaped break joins the lines with nothing.
				for j < len(raw) && (raw[j] == '\n' || raw[j] == '\r' || blank(raw[j])) {
					j++
				}
				continue
			}
			switch raw[j] {
			case 'x':
				j += 2
			case 'u':
				j += 4
			case 'U':
				j += 8
			}
			j++
			_, n := utf8.DecodeRuneInString(val[i:])
			i += n
		case s.quote == '\'' && c == '\'' && j+1 < len(raw) && raw[j+1] == '\'':
			i, j = i+1, j+2
		default:
			i, j = i+1, j+1
		}
	}
	j = min(j, len(raw))
	pos := s.rawAt
	if nl := bytes.Count(raw[:j], []byte("\n")); nl > 0 {
		pos.Line += nl
		pos.Col = j - bytes.LastIndexByte(raw[:j], '\n')
	} else {
		pos.Col += j
	}
	return pos
}

// At is where line and column (1-based) of the script's body are in the
// plan, for errors the script throws at run time.
func (s *Script) At(line, col int) Pos { return s.at([2]int{line, col}) }

// linkScripts marks, in a scenario's step list, the request before each
// script step as keeping its body (the script reads it as response.body)
// and each script as coming after a request or not.
func linkScripts(steps []*Step) {
	var last *Step
	for _, st := range steps {
		switch st.Kind {
		case StepRequest:
			last = st
		case StepScript:
			if st.Script == nil {
				continue
			}
			st.Script.AfterRequest = last != nil
			if last != nil && strings.Contains(st.Script.Source, "response") {
				last.KeepBody = true
			}
		}
	}
}
