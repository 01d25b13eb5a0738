package plan

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/grafana/sobek"
	jsparser "github.com/grafana/sobek/parser"
	"gopkg.in/yaml.v3"
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
	Program *sobek.Program
	// Captures are the capture slots the script reads by name: those of
	// earlier steps and its own sets.
	Captures map[string]int
	// Sets are the slots set(name, value) may write, by name.
	Sets map[string]int
	// AfterRequest is false when no request step comes before the script
	// in its scenario: it then sees no response (status 0).
	AfterRequest bool
	// Pos is where the source's first character is in the plan, and
	// Block is true when the source is a block scalar (| or >), whose
	// lines are the plan's lines from Pos.Line on, indented by Pos.Col-1.
	Pos   Pos
	Block bool
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
	for name, slot := range sc.captures {
		s.Captures[name] = slot
	}
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
func compileScript(file, body string) (*sobek.Program, [2]int, string) {
	src := scriptPrefix + body + "\n})"
	ast, err := jsparser.ParseFile(nil, file, src, 0)
	if err != nil {
		var list jsparser.ErrorList
		var one *jsparser.Error
		switch {
		case errors.As(err, &list) && len(list) > 0:
			one = list[0]
		case errors.As(err, &one):
		default:
			return nil, [2]int{}, err.Error()
		}
		return nil, [2]int{one.Position.Line - 1, one.Position.Column}, one.Message
	}
	prog, err := sobek.CompileAST(ast, true)
	if err != nil {
		var se *sobek.CompilerSyntaxError
		if errors.As(err, &se) && se.File != nil {
			at := se.File.Position(se.Offset)
			return nil, [2]int{at.Line - 1, at.Column}, se.Message
		}
		return nil, [2]int{}, err.Error()
	}
	return prog, [2]int{}, ""
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
		return Pos{File: p.file, Line: v.Line + 1, Col: len(line) - len(bytes.TrimLeft(line, " ")) + 1}, true
	}
	return pos, false
}

// at maps a line and column of the script's body to the plan file. Lines
// of a quoted or plain scalar beyond its first are approximate (YAML may
// have folded them), so they point at the line only.
func (s *Script) at(lc [2]int) Pos {
	line, col := lc[0], lc[1]
	pos := s.Pos
	if line < 1 {
		return pos
	}
	if s.Block {
		return Pos{File: pos.File, Line: pos.Line + line - 1, Col: pos.Col + col - 1}
	}
	if line == 1 {
		pos.Col += col - 1
		return pos
	}
	return Pos{File: pos.File, Line: pos.Line + line - 1, Col: 1}
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
