package plan

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Workflows: setup and teardown around the load, once steps per user with
// renewal, and control flow (if, repeat, for_each, choose) inside a
// scenario. Control flow is compiled at load into a flat list of steps with
// jumps, so the engine walks one list with a program counter, as before,
// and a user's loop state is a few integers.

// Control step kinds. They sit well above the request and think kinds so
// that code which looks for those skips them.
const (
	// StepIf goes on when Flow.Cond is true, else to Flow.Jump.
	StepIf StepKind = 32 + iota
	// StepGoto goes to Flow.Jump.
	StepGoto
	// StepLoop starts a repeat or for_each: it sets the loop's count (or
	// list) in the user's loop slot Flow.Loop.
	StepLoop
	// StepNext begins each pass of a loop: past the last it goes to
	// Flow.Jump, else it sets for_each's variable and goes on.
	StepNext
	// StepChoose goes to one of Flow.Branches, drawn by Flow.Weights.
	StepChoose
	// StepOnce goes to Flow.Jump when the user's once steps have run.
	StepOnce
	// StepOnceEnd marks the user's once steps done.
	StepOnceEnd
)

// MaxForEach bounds the list a for_each walks, so a response cannot make
// one iteration send without end.
const MaxForEach = 1000

// MaxRepeat bounds repeat for the same reason.
const MaxRepeat = 10000

// MaxWeight bounds a choose branch's weight, so the weights' running
// total (at most MaxWeight × branches) cannot overflow.
const MaxWeight = 1000000

// maxFlowDepth bounds nesting of control steps.
const maxFlowDepth = 16

// Flow is a control step's compiled form.
type Flow struct {
	Cond *Expr // StepIf; the list of a for_each (StepLoop)
	Jump int
	Loop int // StepLoop, StepNext: the user's loop slot
	// Count is repeat's count; 0 for a for_each.
	Count int
	// Var is the capture slot for_each sets to each item.
	Var int
	// Branches are where StepChoose's branches start; Weights their
	// cumulative weights.
	Branches []int
	Weights  []int
}

// ScenarioFlow is what a scenario's workflow needs beside its steps.
type ScenarioFlow struct {
	// OnceEnd is the index of the first step after the once steps
	// (including StepOnce and StepOnceEnd); 0 without once steps.
	OnceEnd int
	// RenewOn are the statuses that make a user run its once steps again
	// and retry the step; nil: never.
	RenewOn []StatusMatch
	// Loops is how many loop slots a user of the scenario needs.
	Loops int
}

func init() {
	requestKeys = append(requestKeys, "if")
	topExtensions = append(topExtensions,
		topExtension{key: "setup", parse: func(*parser, *yaml.Node) {}},
		topExtension{key: "teardown", parse: (*parser).teardown},
	)
	scenarioExtensions = append(scenarioExtensions,
		scenarioExtension{key: "once", parse: func(*parser, *Scenario, *yaml.Node) {}},
		scenarioExtension{key: "renew_on", parse: func(*parser, *Scenario, *yaml.Node) {}},
	)
}

// flowBuilder appends the flat steps of one list of steps.
type flowBuilder struct {
	p        *parser
	sc       *scope
	steps    []*Step
	loops    int
	requests int
	failed   int
	// acts counts request and think steps, so a loop whose steps do
	// neither (and would spin without end) is refused.
	acts int
}

// setup parses the setup steps, before the scenarios, whose templates may
// read its captures.
func (p *parser) setup(f map[string]kv) {
	e, ok := f["setup"]
	if !ok {
		return
	}
	p.plan.Setup = p.phase(e.k, e.v, "setup", nil)
}

func (p *parser) teardown(n *yaml.Node) {
	p.plan.Teardown = p.phase(deref(n), n, "teardown", p.globals())
}

// globals are the setup's captures by name: what every user may read.
func (p *parser) globals() map[string]int {
	if p.plan.Setup == nil {
		return nil
	}
	g := map[string]int{}
	for i, name := range p.plan.Setup.CaptureNames {
		g[name] = i
	}
	return g
}

// phase parses setup or teardown: a list of steps run once by one user.
func (p *parser) phase(k, v *yaml.Node, name string, globals map[string]int) *Scenario {
	s := &Scenario{Name: name, Pos: p.pos(k)}
	items, ok := p.list(v, name)
	if !ok {
		return nil
	}
	if len(items) == 0 {
		p.errf(k, "%s has no steps: expected a list of request steps such as [{post: /login}]", name)
		return nil
	}
	sc := p.scope(map[string]int{})
	sc.globals = globals
	fb := &flowBuilder{p: p, sc: sc}
	fb.list(items, 0)
	if len(sc.dataUsed) > 0 {
		p.errf(k, "%s cannot read data: it runs once, outside any iteration; use vars", name)
	}
	s.Steps = fb.steps
	s.Flow.Loops = fb.loops
	s.Captures = len(sc.capOrder)
	s.CaptureNames = sc.capOrder
	if name == "setup" {
		p.setupAt = sc.capAt
	}
	return s
}

// declare gives capture name its slot in sc: the slot it already has when
// the name is captured again. A name the setup captures is refused where
// the setup's captures are read: the user's capture would silently hide
// the setup's value from every later step of the user.
func (p *parser) declare(sc *scope, name string, n *yaml.Node) int {
	if _, global := sc.globals[name]; global {
		p.errf(n, "capture %s has the name of the setup's capture at %s: it would hide the setup's value from every later step; rename one of them", q(name), p.setupAt[name])
	}
	slot, seen := sc.captures[name]
	if !seen {
		slot = len(sc.capOrder)
		sc.captures[name] = slot
		sc.capOrder = append(sc.capOrder, name)
		if sc.capAt == nil {
			sc.capAt = map[string]Pos{}
		}
		sc.capAt[name] = p.pos(n)
	}
	return slot
}

// scenarioFlow parses a scenario's once steps, renew_on and steps into
// s.Steps, and counts its request steps and failed steps.
func (p *parser) scenarioFlow(s *Scenario, f map[string]kv, items []*yaml.Node, sc *scope) (int, int) {
	sc.globals = p.globals()
	fb := &flowBuilder{p: p, sc: sc}
	if e, ok := f["once"]; ok {
		once, _ := p.list(e.v, "once")
		if len(once) > 0 {
			guard := &Step{Kind: StepOnce, Pos: p.pos(e.k), Flow: &Flow{}}
			fb.steps = append(fb.steps, guard)
			fb.list(once, 0)
			fb.steps = append(fb.steps, &Step{Kind: StepOnceEnd, Pos: p.pos(e.k), Flow: &Flow{}})
			guard.Flow.Jump = len(fb.steps)
			s.Flow.OnceEnd = len(fb.steps)
		}
	}
	if e, ok := f["renew_on"]; ok {
		items := []*yaml.Node{e.v}
		if v := deref(e.v); v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		for _, it := range items {
			st, ok := p.text(it, "renew_on")
			if !ok {
				continue
			}
			m, ok := parseStatus(st)
			if !ok || m.Code != 0 && m.Code < 400 || m.Class != 0 && m.Class < 4 {
				p.errf(it, "bad renew_on %s: expected a 4xx or 5xx status such as 401, or a list of them", q(st))
				continue
			}
			s.Flow.RenewOn = append(s.Flow.RenewOn, m)
		}
		if s.Flow.OnceEnd == 0 {
			p.errf(e.k, "renew_on needs once steps to run again: add once: [{post: /login, capture: ...}] to the scenario")
		}
	}
	fb.list(items, 0)
	s.Steps = fb.steps
	s.Flow.Loops = fb.loops
	return fb.requests, fb.failed
}

// list appends the flat steps of items.
func (fb *flowBuilder) list(items []*yaml.Node, depth int) {
	for _, it := range items {
		fb.item(it, depth)
	}
}

func (fb *flowBuilder) add(st *Step) int {
	fb.steps = append(fb.steps, st)
	return len(fb.steps) - 1
}

func hasKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == key {
			return k
		}
	}
	return nil
}

func (fb *flowBuilder) item(n *yaml.Node, depth int) {
	p := fb.p
	n = deref(n)
	if n.Kind == yaml.MappingNode {
		_, group := func() (*yaml.Node, bool) { k := hasKey(n, "steps"); return k, k != nil }()
		for _, key := range []string{"repeat", "for_each", "choose"} {
			if hasKey(n, key) != nil {
				group = true
			}
		}
		if group {
			if depth >= maxFlowDepth {
				p.errf(n, "control steps nested too deeply: expected at most %d levels", maxFlowDepth)
				fb.failed++
				return
			}
			fb.group(n, depth)
			return
		}
		if k := hasKey(n, "if"); k != nil {
			fb.guardedStep(n, depth)
			return
		}
	}
	st := p.step(n, fb.sc)
	if st == nil {
		fb.failed++
		return
	}
	if st.Kind == StepRequest {
		fb.requests++
	}
	fb.acts++
	fb.add(st)
}

// guardedStep is a request step with an if: the condition, then the step.
func (fb *flowBuilder) guardedStep(n *yaml.Node, depth int) {
	p := fb.p
	var cond *Expr
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Value == "if" {
			cond = fb.cond(n.Content[i+1])
		}
	}
	at := fb.add(&Step{Kind: StepIf, Pos: p.pos(n), Flow: &Flow{Cond: cond}})
	st := p.step(n, fb.sc)
	if st == nil || cond == nil {
		fb.failed++
		fb.steps = fb.steps[:at]
		return
	}
	if st.Kind == StepRequest {
		fb.requests++
	}
	fb.acts++
	fb.add(st)
	fb.steps[at].Flow.Jump = len(fb.steps)
}

// cond compiles an if: condition.
func (fb *flowBuilder) cond(n *yaml.Node) *Expr {
	p := fb.p
	s, ok := p.text(n, "if")
	if !ok {
		return nil
	}
	if strings.TrimSpace(s) == "" {
		p.errf(n, "bad if: expected a condition such as status == 200 or token != \"\"")
		return nil
	}
	e, msg, off := compileExpr(s, fb.sc, true)
	if msg != "" {
		p.errAt(p.posIn(deref(n), s, off), "%s", msg)
		return nil
	}
	e.Pos = p.pos(deref(n))
	return e
}

var groupKinds = []string{"if", "repeat", "for_each", "choose"}

// group is a control step: if, repeat or for_each over steps, or choose.
func (fb *flowBuilder) group(n *yaml.Node, depth int) {
	p := fb.p
	f := p.fields(n, "control step", []string{"if", "else", "repeat", "for_each", "as", "choose", "steps"})
	kind := p.oneOf(f, groupKinds, "control step", "one of if, repeat, for_each, choose")
	if kind == nil {
		p.errf(n, "steps without a control key: expected if, repeat, for_each or choose beside steps (a plain step needs none of them)")
		fb.failed++
		return
	}
	if kind.key != "choose" {
		if _, ok := f["steps"]; !ok {
			p.errf(kind.k, "%s needs steps: expected %s: ... with steps: [...]", kind.key, kind.key)
			fb.failed++
			return
		}
	}
	for _, k := range []string{"else", "as"} {
		if e, ok := f[k]; ok && (k == "else" && kind.key != "if" || k == "as" && kind.key != "for_each") {
			p.errf(e.k, "%s belongs to %s, not %s", k, map[string]string{"else": "if", "as": "for_each"}[k], kind.key)
		}
	}
	body := func() []*yaml.Node {
		items, _ := p.list(f["steps"].v, kind.key+" steps")
		if len(items) == 0 {
			p.errf(f["steps"].k, "%s has no steps: expected at least one", kind.key)
			fb.failed++
		}
		return items
	}
	switch kind.key {
	case "if":
		fb.ifElse(kind, f, body, depth)
	case "repeat":
		count, ok := p.intMin(kind.v, "repeat", 1)
		if ok && count > MaxRepeat {
			p.errf(kind.v, "bad repeat %d: expected at most %d", count, MaxRepeat)
			ok = false
		}
		if !ok {
			fb.failed++
		}
		fb.loop(&Flow{Count: count}, p.pos(kind.k), body, depth)
	case "for_each":
		fb.forEach(kind, f, body, depth)
	case "choose":
		fb.choose(kind, depth)
	}
}

// ifElse lays out: StepIf (jumping past its steps when false), its steps,
// and with else a StepGoto past the else steps that follow.
func (fb *flowBuilder) ifElse(kind *kv, f map[string]kv, body func() []*yaml.Node, depth int) {
	p := fb.p
	cond := fb.cond(kind.v)
	at := fb.add(&Step{Kind: StepIf, Pos: p.pos(kind.k), Flow: &Flow{Cond: cond}})
	if cond == nil {
		fb.failed++
	}
	fb.list(body(), depth+1)
	e, ok := f["else"]
	if !ok {
		fb.steps[at].Flow.Jump = len(fb.steps)
		return
	}
	skip := fb.add(&Step{Kind: StepGoto, Pos: p.pos(e.k), Flow: &Flow{}})
	fb.steps[at].Flow.Jump = len(fb.steps)
	items, _ := p.list(e.v, "else steps")
	fb.list(items, depth+1)
	fb.steps[skip].Flow.Jump = len(fb.steps)
}

// forEach is a loop over the list an expression gives, each item under
// the name as: gives (item by default).
func (fb *flowBuilder) forEach(kind *kv, f map[string]kv, body func() []*yaml.Node, depth int) {
	p := fb.p
	s, ok := p.text(kind.v, "for_each")
	var list *Expr
	if ok {
		var msg string
		var off int
		list, msg, off = compileExpr(s, fb.sc, false)
		if msg != "" {
			p.errAt(p.posIn(deref(kind.v), s, off), "%s (for_each takes a capture holding a JSON list, or an expression giving a list)", msg)
		}
	}
	if list == nil {
		fb.failed++
	}
	name, at := "item", kind.k
	if e, ok := f["as"]; ok {
		if s, ok := p.text(e.v, "as"); ok {
			switch {
			case !isIdent(s):
				p.errf(e.v, "bad as %s: expected a name of letters, digits, _ and -", q(s))
			case reserved[s]:
				p.errf(e.v, "bad as %s: %s are reserved in templates", q(s), reservedHelp)
			default:
				name, at = s, e.v
			}
		}
	}
	slot := p.declare(fb.sc, name, at)
	fb.loop(&Flow{Cond: list, Var: slot}, p.pos(kind.k), body, depth)
}

// loop lays out: StepLoop, StepNext, body, StepGoto back to StepNext.
func (fb *flowBuilder) loop(fl *Flow, pos Pos, body func() []*yaml.Node, depth int) {
	fl.Loop = fb.loops
	fb.loops++
	head := fb.add(&Step{Kind: StepLoop, Pos: pos, Flow: fl})
	next := fb.add(&Step{Kind: StepNext, Pos: pos, Flow: &Flow{Loop: fl.Loop, Var: fl.Var, Count: fl.Count}})
	acts, failed := fb.acts, fb.failed
	fb.list(body(), depth+1)
	if fb.acts == acts && fb.failed == failed {
		fb.p.errAt(pos, "loop steps send nothing: expected at least one request or think step among them")
		fb.failed++
	}
	fb.add(&Step{Kind: StepGoto, Pos: pos, Flow: &Flow{Jump: next}})
	fb.steps[head].Flow.Jump = len(fb.steps)
	fb.steps[next].Flow.Jump = len(fb.steps)
}

// choose lays out: StepChoose, then each branch ending in a StepGoto to
// the end.
func (fb *flowBuilder) choose(kind *kv, depth int) {
	p := fb.p
	items, _ := p.list(kind.v, "choose")
	if len(items) == 0 {
		p.errf(kind.k, "choose has no branches: expected a list such as [{weight: 3, steps: [...]}, {weight: 1, steps: [...]}]")
		fb.failed++
		return
	}
	at := fb.add(&Step{Kind: StepChoose, Pos: p.pos(kind.k), Flow: &Flow{}})
	var ends []int
	total := 0
	for _, it := range items {
		bf := p.fields(it, "choose branch", []string{"weight", "steps"})
		w := 1
		if e, ok := bf["weight"]; ok {
			if v, ok := p.intMin(e.v, "weight", 1); ok && v > MaxWeight {
				// Weights are summed into an int the draw reads: a
				// huge one would overflow it and crash the run.
				p.errf(e.v, "bad weight %d: expected at most %d", v, MaxWeight)
				fb.failed++
			} else if ok {
				w = v
			}
		}
		total += w
		fb.steps[at].Flow.Branches = append(fb.steps[at].Flow.Branches, len(fb.steps))
		fb.steps[at].Flow.Weights = append(fb.steps[at].Flow.Weights, total)
		e, ok := bf["steps"]
		if !ok {
			if deref(it).Kind == yaml.MappingNode && p.missing(it, "steps") {
				p.errf(deref(it), "choose branch has no steps: expected {weight: N, steps: [...]}")
			}
			fb.failed++
		} else {
			steps, _ := p.list(e.v, "choose branch steps")
			fb.list(steps, depth+1)
		}
		ends = append(ends, fb.add(&Step{Kind: StepGoto, Pos: p.pos(deref(it)), Flow: &Flow{}}))
	}
	for _, e := range ends {
		fb.steps[e].Flow.Jump = len(fb.steps)
	}
}
