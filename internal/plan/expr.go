package plan

import (
	"github.com/stampede-load/stampede/internal/plan/lang"
)

// Expr is an expression compiled once at load (package lang): an if:
// condition, a for_each list, or a computed {{ ... }} value, with where it
// was written. Every name it reads was checked at load, so it cannot fail
// on a typo at run time.
type Expr struct {
	Source string
	Pos    Pos
	prog   *lang.Expr
}

// ExprState is one user's evaluation state (lang.State).
type ExprState = lang.State

// compileExpr compiles src against what sc names. asBool makes a condition
// of it. On failure it returns a message and the byte offset in src it is
// about.
func compileExpr(src string, sc *scope, asBool bool) (*Expr, string, int) {
	prog, msg, off := lang.Compile(src, sc.lang(), asBool)
	if prog == nil {
		return nil, msg, off
	}
	return &Expr{Source: src, prog: prog}, "", 0
}

// lang is the scope as the expression language reads it.
func (sc *scope) lang() *lang.Scope {
	if sc == nil {
		return &lang.Scope{}
	}
	data := make(map[string]lang.Source, len(sc.data))
	for name, ds := range sc.data {
		data[name] = lang.Source{Index: ds.Index, Columns: ds.Columns}
	}
	return &lang.Scope{Vars: sc.vars, Data: data, Tenants: sc.tenants, Captures: sc.captures,
		CapOrder: sc.capOrder, Globals: sc.globals, DataUsed: sc.dataUsed}
}

// ReservedName reports whether a capture named name could not be read
// back: templates or expressions give the name a meaning of their own
// (tenant, vu, expr's builtins and operators). Tools that name captures
// (stampede convert) steer clear of these.
func ReservedName(name string) bool { return reserved[name] || lang.Word(name) }

// Eval runs e for one user. A nil state (a caller with no user) evaluates
// with a state of its own.
func (e *Expr) Eval(env *Env) (any, error) {
	if env.Expr == nil {
		env.Expr = &ExprState{}
	}
	v := lang.Values{Captures: env.Captures, Rows: env.Rows, Tenant: env.Tenant, VU: env.VU, Iter: env.Iter,
		Globals: env.Globals, Status: env.Status, Body: env.Body, Rand: env.Rand}
	return e.prog.Eval(env.Expr, &v)
}

// Bool evaluates a condition. A condition that fails to evaluate is false,
// with the reason in err.
func (e *Expr) Bool(env *Env) (bool, error) {
	v, err := e.Eval(env)
	if err != nil {
		return false, err
	}
	b, _ := v.(bool)
	return b, nil
}

// AppendValue renders a value computed by an expression as template text.
func AppendValue(dst []byte, v any) []byte { return lang.AppendValue(dst, v) }

// appendExpr renders a {{ expression }} part. A value that fails to
// evaluate renders as nothing; the request then usually fails its checks,
// which say more than an engine error would.
func appendExpr(dst []byte, p *Part, env *Env) []byte {
	v, err := p.Expr.Eval(env)
	if err != nil {
		return dst
	}
	if s, ok := v.(string); ok {
		return appendEscaped(dst, s, p.Escape)
	}
	if p.Escape == EscapeNone {
		return AppendValue(dst, v)
	}
	return appendEscaped(dst, string(AppendValue(nil, v)), p.Escape)
}
