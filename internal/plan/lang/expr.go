// Package lang holds the plan's languages: expressions (expr-lang) compiled
// and checked against the names a place in a plan may read, and evaluated
// per user; and scripts (sobek, a JavaScript engine) compiled in strict
// mode and run for a user on a pooled, bounded runtime (Run). It is the one
// package that links those engines, so the load maths, the split and the
// engines need neither; it knows nothing of a plan or a user (package plan
// describes a place's names in a Scope, and vu is a script's Host).
package lang

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	exprparser "github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Expr is an expression (github.com/expr-lang/expr) compiled once at load:
// an if: condition, a for_each list, or a computed {{ ... }} value. Every
// name it reads was checked at load, so it cannot fail on a typo at run
// time.
type Expr struct {
	program *vm.Program
	// refs are the names it reads that change while a user runs, so an
	// evaluation refreshes those only.
	refs []exprRef
	// vars is the plan's vars as expression values, shared read-only.
	vars map[string]any
	data map[string]Source
}

// Scope is what an expression at one place of a plan may name.
type Scope struct {
	// Vars are the plan's vars and their values.
	Vars map[string]string
	// Data are the data sources by name.
	Data map[string]Source
	// Tenants is true when the plan has a tenant pool.
	Tenants bool
	// Captures are the captures of earlier steps by name (their slots in
	// Values.Captures), CapOrder the same names in the order declared.
	Captures map[string]int
	CapOrder []string
	// Globals are the setup's captures by name (slots of Values.Globals).
	Globals map[string]int
	// DataUsed, when not nil, gets the index of every data source an
	// expression reads marked.
	DataUsed map[int]bool
}

// Source is a data source as an expression reads it: its place among the
// plan's sources (Values.Rows) and its columns (nil when its file failed to
// load, whose own error then explains).
type Source struct {
	Index   int
	Columns []string
}

// Values are what a user's evaluation reads: its captures, data rows,
// tenant, ids, the setup's captures, the last status, the body being
// built, and its random generator (nil: the process's).
type Values struct {
	Captures []string
	Rows     [][]string
	Tenant   int
	VU, Iter int64
	Globals  []string
	Status   int
	Body     []byte
	Rand     RandSource
}

// RandSource is a user's random generator.
type RandSource interface {
	Int64N(int64) int64
	Uint64() uint64
}

type exprRefKind uint8

const (
	refCapture exprRefKind = iota
	refGlobal
	refStatus
	refVU
	refIter
	refTenant
	refData
	refBody
	refRand
)

// randName is the hidden name through which uuid() and choice() get the
// user's generator (see randArg): not a name a plan can write, so no
// capture can take it.
const randName = "@rand"

// randArg passes the evaluating user's generator to uuid() and choice(),
// as their hidden first argument: functions are shared by every user, and
// a plan's seed: must reproduce their draws as it does {{ uuid }}'s.
type randArg struct{}

func (randArg) Visit(node *ast.Node) {
	call, ok := (*node).(*ast.CallNode)
	if !ok {
		return
	}
	id, ok := call.Callee.(*ast.IdentifierNode)
	if !ok || (id.Value != "uuid" && id.Value != "choice") {
		return
	}
	if len(call.Arguments) > 0 {
		if a, ok := call.Arguments[0].(*ast.IdentifierNode); ok && a.Value == randName {
			return
		}
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    call.Callee,
		Arguments: append([]ast.Node{&ast.IdentifierNode{Value: randName}}, call.Arguments...),
	})
}

// randBox holds a user's generator for randArg; one per State, so
// passing it costs no allocation.
type randBox struct{ r RandSource }

// userRand is the generator randArg passed; nil (an evaluation with no
// user) draws from the process's.
func userRand(v any) RandSource {
	if b, _ := v.(*randBox); b != nil && b.r != nil {
		return b.r
	}
	return nil
}

type exprRef struct {
	name string
	kind exprRefKind
	slot int
}

// State is one user's evaluation state: a VM and the environment
// mapping it reads, reused across evaluations so that a condition over a
// capture allocates only when the capture's value has changed.
type State struct {
	vm  vm.VM
	env map[string]any
	raw map[string]string
	// status holds the last status boxed, since boxing an int >= 256
	// allocates.
	status    int
	statusSet bool
	rand      randBox
}

// exprFuncNames are the functions plans may call besides expr's builtins.
var exprFuncNames = []string{"hmac_sha256", "sha256", "base64", "url_encode", "uuid", "choice", "json"}

// exprNames are the bare names an expression may read besides captures.
var exprNames = []string{"vars", "data", "status", "vu", "iter", "tenant", "body"}

var exprFuncs = []expr.Option{
	expr.Function("hmac_sha256", func(a ...any) (any, error) {
		m := hmac.New(sha256.New, []byte(a[0].(string)))
		m.Write([]byte(a[1].(string)))
		return hex.EncodeToString(m.Sum(nil)), nil
	}, new(func(string, string) string)),
	expr.Function("sha256", func(a ...any) (any, error) {
		s := sha256.Sum256([]byte(a[0].(string)))
		return hex.EncodeToString(s[:]), nil
	}, new(func(string) string)),
	expr.Function("base64", func(a ...any) (any, error) {
		return base64.StdEncoding.EncodeToString([]byte(a[0].(string))), nil
	}, new(func(string) string)),
	expr.Function("url_encode", func(a ...any) (any, error) {
		return url.QueryEscape(a[0].(string)), nil
	}, new(func(string) string)),
	expr.Function("uuid", func(a ...any) (any, error) {
		if r := userRand(a[0]); r != nil {
			return string(AppendUUID(nil, r.Uint64(), r.Uint64())), nil
		}
		return string(AppendUUID(nil, rand.Uint64(), rand.Uint64())), nil
	}, new(func(*randBox) string)),
	expr.Function("choice", func(a ...any) (any, error) {
		if len(a) != 2 {
			return nil, errors.New("choice takes one list")
		}
		v := reflect.ValueOf(a[1])
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
			return nil, fmt.Errorf("choice needs a list, got %T", a[1])
		}
		if v.Len() == 0 {
			return nil, errors.New("choice of an empty list")
		}
		if r := userRand(a[0]); r != nil {
			return v.Index(int(r.Int64N(int64(v.Len())))).Interface(), nil
		}
		return v.Index(rand.IntN(v.Len())).Interface(), nil
	}),
	expr.Function("json", func(a ...any) (any, error) {
		s, ok := a[0].(string)
		if !ok {
			return nil, fmt.Errorf("json needs text, got %T", a[0])
		}
		var doc any
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			return nil, fmt.Errorf("json: not JSON: %.60q", s)
		}
		if len(a) < 2 || a[1].(string) == "" {
			return doc, nil
		}
		for _, p := range strings.Split(a[1].(string), ".") {
			switch v := doc.(type) {
			case map[string]any:
				doc = v[p]
			case []any:
				i, err := strconv.Atoi(p)
				if err != nil || i < 0 || i >= len(v) {
					return nil, nil
				}
				doc = v[i]
			default:
				return nil, nil
			}
		}
		return doc, nil
	}, new(func(string) any), new(func(string, string) any)),
}

// Compile compiles src against what sc names. asBool makes a condition of
// it. On failure it returns a message and the byte offset in src it is
// about.
func Compile(src string, sc *Scope, asBool bool) (*Expr, string, int) {
	env, vars := exprEnv(sc)
	opts := append([]expr.Option{expr.Env(env), expr.Patch(randArg{})}, exprFuncs...)
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			m := strings.TrimSpace(fe.Message)
			if strings.HasPrefix(m, "unknown name") {
				m += names(sc)
			}
			return nil, "bad expression " + q(src) + ": " + m, runeOffset(src, fe.From)
		}
		return nil, "bad expression " + q(src) + ": " + err.Error(), 0
	}
	e := &Expr{program: prog, vars: vars, data: sc.Data}
	// The checker lets any key of a map through (vars.nope is nil), so
	// names under vars and data are checked here, at load.
	c := &exprChecker{sc: sc, e: e, seen: map[string]bool{}}
	node := prog.Node()
	ast.Walk(&node, &exprVisitor{visit: c.visit})
	if c.msg != "" {
		return nil, "bad expression " + q(src) + ": " + c.msg, runeOffset(src, c.off)
	}
	return e, "", 0
}

// exprEnv is what an expression may name, typed for the checker: the
// per-request values, the vars (their values, which the expression reads
// at run time), the data sources' columns, globals and captures.
func exprEnv(sc *Scope) (env, vars map[string]any) {
	env = map[string]any{
		"status": 0, "vu": 0, "iter": 0, "tenant": 0, "body": "",
		randName: (*randBox)(nil),
	}
	vars = map[string]any{}
	for k, v := range sc.Vars {
		vars[k] = v
	}
	env["vars"] = vars
	data := map[string]any{}
	for name, ds := range sc.Data {
		cols := map[string]any{}
		for _, c := range ds.Columns {
			cols[c] = ""
		}
		data[name] = cols
	}
	env["data"] = data
	for name := range sc.Globals {
		env[name] = ""
	}
	for name := range sc.Captures {
		env[name] = ""
	}
	return env, vars
}

// exprChecker walks a compiled expression: it checks the names under vars
// and data, and records which per-request values the expression reads.
// The first problem found is kept, with its offset.
type exprChecker struct {
	sc   *Scope
	e    *Expr
	msg  string
	off  int
	seen map[string]bool
}

func (c *exprChecker) visit(n ast.Node) {
	if c.msg != "" {
		return
	}
	switch n := n.(type) {
	case *ast.MemberNode:
		c.member(n)
	case *ast.CallNode:
		// choice is untyped (any list), so the checker does not count its
		// arguments: the list and the hidden generator.
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && id.Value == "choice" && len(n.Arguments) != 2 {
			c.msg, c.off = "choice takes one list, such as choice([\"a\", \"b\"])", n.Location().From
		}
	case *ast.IdentifierNode:
		c.ident(n)
	}
}

// member checks vars.NAME, data.SOURCE and data.SOURCE.COLUMN.
func (c *exprChecker) member(n *ast.MemberNode) {
	sc := c.sc
	prop, ok2 := n.Property.(*ast.StringNode)
	if src, ok := n.Node.(*ast.MemberNode); ok && ok2 {
		// data.SOURCE.COLUMN: the source was checked when its own node
		// was visited (children first); the column here.
		id, ok := src.Node.(*ast.IdentifierNode)
		name, ok3 := src.Property.(*ast.StringNode)
		if !ok || !ok3 || id.Value != "data" {
			return
		}
		// A source whose file failed to load has no columns; its own
		// error already explains.
		if ds, ok := sc.Data[name.Value]; ok && ds.Columns != nil && !slices.Contains(ds.Columns, prop.Value) {
			c.msg, c.off = "data source "+q(name.Value)+" has no column "+q(prop.Value)+": its columns are "+strings.Join(ds.Columns, ", "), n.Location().From
		}
		return
	}
	id, ok := n.Node.(*ast.IdentifierNode)
	if !ok || !ok2 {
		return
	}
	switch id.Value {
	case "vars":
		if _, ok := sc.Vars[prop.Value]; !ok {
			c.msg, c.off = UnknownVar(prop.Value, sc.Vars), n.Location().From
		}
	case "data":
		if ds, ok := sc.Data[prop.Value]; !ok {
			c.msg, c.off = UnknownData(prop.Value, sc.Data), n.Location().From
		} else if sc.DataUsed != nil {
			sc.DataUsed[ds.Index] = true
		}
	}
}

// Word reports whether an expression gives name a meaning of its own
// (expr's builtins and operators, and the values it reads by name), so a
// capture of that name could not be read back.
func Word(name string) bool { return exprWords[name] }

// exprWords are names an expression gives a meaning of its own (expr's
// builtins and operators, and the values it reads by name).
var exprWords = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range builtin.Names {
		m[n] = true
	}
	for _, n := range []string{"in", "not", "and", "or", "matches", "contains", "startsWith", "endsWith",
		"let", "nil", "true", "false", "if", "else", "status", "body"} {
		m[n] = true
	}
	return m
}()

// valueRefs are the per-request values an expression may read by name.
var valueRefs = map[string]exprRefKind{"status": refStatus, "vu": refVU, "iter": refIter, "tenant": refTenant,
	"data": refData, "body": refBody, randName: refRand}

// ident records a name the expression reads, once.
func (c *exprChecker) ident(n *ast.IdentifierNode) {
	if c.seen[n.Value] {
		return
	}
	c.seen[n.Value] = true
	switch kind, ok := valueRefs[n.Value]; {
	case n.Value == "vars":
	case ok:
		if kind == refTenant && !c.sc.Tenants {
			c.msg, c.off = "tenant needs a tenant pool: add tenants: {count: N} to the plan", n.Location().From
		}
		c.e.refs = append(c.e.refs, exprRef{name: n.Value, kind: kind})
	default:
		if slot, ok := c.sc.Captures[n.Value]; ok {
			c.e.refs = append(c.e.refs, exprRef{name: n.Value, kind: refCapture, slot: slot})
		} else if slot, ok := c.sc.Globals[n.Value]; ok {
			c.e.refs = append(c.e.refs, exprRef{name: n.Value, kind: refGlobal, slot: slot})
		}
	}
}

// names lists what an expression may name, for an unknown name's error.
func names(sc *Scope) string {
	if sc == nil {
		return ""
	}
	var caps []string
	caps = append(caps, sc.CapOrder...)
	caps = append(caps, keys(sc.Globals)...)
	sort.Strings(caps)
	so := "none"
	if len(caps) > 0 {
		so = strings.Join(caps, ", ")
	}
	return " (names: " + strings.Join(exprNames, ", ") + "; captures so far: " + so + "; functions: " + strings.Join(exprFuncNames, ", ") + " and expr's builtins)"
}

// runeOffset turns expr's rune index into a byte offset in src.
func runeOffset(src string, runes int) int {
	i := 0
	for b := range src {
		if i == runes {
			return b
		}
		i++
	}
	return len(src)
}

type exprVisitor struct{ visit func(ast.Node) }

func (v *exprVisitor) Visit(n *ast.Node) { v.visit(*n) }

// boxedStatus holds every HTTP status boxed once, so that refreshing
// status costs no allocation.
var boxedStatus = func() [600]any {
	var b [600]any
	for i := range b {
		b[i] = i
	}
	return b
}()

// prepare refreshes the names e reads from env and returns the mapping to
// evaluate against.
func (s *State) prepare(e *Expr, env *Values) map[string]any {
	if s.env == nil {
		s.env = map[string]any{"vars": e.vars}
		s.raw = map[string]string{}
	}
	for _, r := range e.refs {
		switch r.kind {
		case refCapture, refGlobal:
			vals := env.Captures
			if r.kind == refGlobal {
				vals = env.Globals
			}
			v := ""
			if r.slot < len(vals) {
				v = vals[r.slot]
			}
			if old, ok := s.raw[r.name]; !ok || old != v {
				s.raw[r.name] = v
				s.env[r.name] = v
			}
		case refStatus:
			if !s.statusSet || s.status != env.Status {
				s.status, s.statusSet = env.Status, true
				if env.Status >= 0 && env.Status < len(boxedStatus) {
					s.env["status"] = boxedStatus[env.Status]
				} else {
					s.env["status"] = env.Status
				}
			}
		case refVU:
			s.env["vu"] = int(env.VU)
		case refIter:
			s.env["iter"] = int(env.Iter)
		case refTenant:
			s.env["tenant"] = env.Tenant
		case refBody:
			s.env["body"] = string(env.Body)
		case refRand:
			s.rand.r = env.Rand
			s.env[randName] = &s.rand
		case refData:
			data := map[string]any{}
			for name, ds := range e.data {
				cols := map[string]any{}
				var row []string
				if ds.Index < len(env.Rows) {
					row = env.Rows[ds.Index]
				}
				for i, c := range ds.Columns {
					if i < len(row) {
						cols[c] = row[i]
					} else {
						cols[c] = ""
					}
				}
				data[name] = cols
			}
			s.env["data"] = data
		}
	}
	return s.env
}

// Eval runs e for one user, whose state s is.
func (e *Expr) Eval(s *State, v *Values) (any, error) {
	out, err := s.vm.Run(e.program, s.prepare(e, v))
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, errors.New(fe.Message)
		}
	}
	return out, err
}

// AppendValue renders a value computed by an expression as template text.
func AppendValue(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return dst
	case string:
		return append(dst, x...)
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float64:
		return strconv.AppendFloat(dst, x, 'f', -1, 64)
	case bool:
		return strconv.AppendBool(dst, x)
	case []byte:
		return append(dst, x...)
	}
	if b, err := json.Marshal(v); err == nil {
		return append(dst, b...)
	}
	return fmt.Append(dst, v)
}

// IsSyntax reports whether src parses as an expression at all, so a
// template reference that does not gets the plain template help instead.
func IsSyntax(src string) bool {
	_, err := exprparser.Parse(src)
	return err == nil
}
