package plan

// Template is a string compiled once at load time into literal and
// reference parts, so rendering on the hot path is appends only.
type Template struct {
	// Source is the template text after ${ENV} expansion, so it may hold a
	// secret: show Step.Name in reports, not Source. For json and form
	// bodies it is the compact body with references still as {{ ... }}.
	Source string
	Parts  []Part
}

// PartKind says what a template part renders.
type PartKind uint8

const (
	PartLiteral   PartKind = iota
	PartCapture            // Env.Captures[Index]
	PartData               // Env.Rows[Index][Column]
	PartTenant             // Env.Tenant
	PartVU                 // Env.VU
	PartIteration          // Env.Iter
	PartUUID               // a random UUIDv4
	PartRandInt            // uniform integer in [Min, Max]
	PartUnixMilli          // the current time in Unix milliseconds
	PartGlobal             // Env.Globals[Index]: a setup capture (workflow.go)
	PartExpr               // the value of Expr (expr.go)
)

// Escape says how a reference's value is escaped where it lands.
type Escape uint8

const (
	EscapeNone  Escape = iota
	EscapeJSON         // inside a JSON string literal
	EscapeQuery        // inside an application/x-www-form-urlencoded value
	EscapePath         // inside a URL path segment
)

// Part is one piece of a template.
type Part struct {
	Kind     PartKind
	Literal  string
	Index    int
	Column   int
	Min, Max int64
	Escape   Escape
	Expr     *Expr // PartExpr
}

// Static reports whether the template renders the same text every time.
func (t *Template) Static() bool {
	for _, p := range t.Parts {
		if p.Kind != PartLiteral {
			return false
		}
	}
	return true
}

// Env is what a template reads when it renders: one virtual user's state in
// one iteration. The engine owns it; templates only read it.
type Env struct {
	Captures []string   // by capture slot of the scenario
	Rows     [][]string // current row of each data source, by DataSource.Index
	Tenant   int        // 1..Plan.Tenants, 0 when there is no pool
	VU       int64      // virtual user number, from 1
	Iter     int64      // iteration number of this user, from 0
	// Globals are the setup's captures, read-only (workflow.go); Status is
	// the previous response's status and Body the request body being
	// built, for expressions; Expr is the user's expression state.
	Globals []string
	Status  int
	Body    []byte
	Expr    *ExprState
	Rand    interface {
		Int64N(int64) int64
		Uint64() uint64
	}
}
