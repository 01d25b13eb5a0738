package vu

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/sample"
)

// loopState is one loop of one user: where it is, and for_each's list.
type loopState struct {
	i, n  int
	items []any
}

// flowState is a user's workflow state: which scenarios' once steps have
// run, the loops, and a renewal in progress.
type flowState struct {
	onceDone []bool
	loops    []loopState
	// retryPC is the step to retry after the once steps ran again for a
	// renewal (-1: none); retrying is the step being retried, which may
	// not renew a second time.
	retryPC, retrying int
	// failed is set when a step of the current iteration failed.
	failed bool
	// renewals counts this user's renewals.
	renewals int64
	// steps counts the control steps of the current iteration, which
	// maxControlSteps bounds.
	steps int
}

// maxControlSteps bounds the control steps one iteration may take: nested
// loops whose requests a condition skips would otherwise spin without
// sending, and without looking at the stop.
const maxControlSteps = 1 << 24

func (f *flowState) begin() {
	f.retryPC, f.retrying, f.failed, f.steps = -1, -1, false, 0
}

// renewable says whether the request step at pc may renew: its scenario
// has renew_on, the step is not one of the once steps, and it is not the
// retry of a renewal.
func (u *User) renewable(sc *Scenario, pc int) []plan.StatusMatch {
	if sc.Flow.RenewOn == nil || pc < sc.Flow.OnceEnd || u.flow.retrying == pc {
		return nil
	}
	return sc.Flow.RenewOn
}

// renew starts the once steps again, to come back to pc after them. It
// returns where to go on.
func (u *User) renew(sc *Scenario, pc int) int {
	u.flow.renewals++
	u.prog.renewals.Add(1)
	u.flow.onceDone[sc.Index] = false
	u.flow.retryPC = pc
	return 1 // the first step after StepOnce
}

// control runs a control step and returns where to go on; ok is false when
// the step failed (recorded) and the iteration should end.
func (u *User) control(sc *Scenario, st *Step, pc int) (int, bool) {
	fl := st.Flow
	if u.flow.steps++; u.flow.steps > maxControlSteps {
		u.failControl(st, "iteration took more than "+strconv.Itoa(maxControlSteps)+" loop and branch steps")
		return 0, false
	}
	switch st.Kind {
	case plan.StepGoto:
		return fl.Jump, true
	case plan.StepIf:
		ok, err := fl.Cond.Bool(&u.env)
		if err != nil {
			u.failControl(st, "if "+strconv.Quote(fl.Cond.Source)+": "+err.Error())
			return 0, false
		}
		if ok {
			return pc + 1, true
		}
		return fl.Jump, true
	case plan.StepLoop:
		return u.startLoop(st, pc)
	case plan.StepNext:
		return u.nextInLoop(fl, pc), true
	case plan.StepChoose:
		r := u.rng.IntN(fl.Weights[len(fl.Weights)-1])
		for i, w := range fl.Weights {
			if r < w {
				return fl.Branches[i], true
			}
		}
		return fl.Branches[len(fl.Branches)-1], true
	case plan.StepOnce:
		if u.flow.onceDone[sc.Index] {
			return fl.Jump, true
		}
		return pc + 1, true
	case plan.StepOnceEnd:
		u.flow.onceDone[sc.Index] = true
		if r := u.flow.retryPC; r >= 0 {
			u.flow.retryPC, u.flow.retrying = -1, r
			return r, true
		}
		return pc + 1, true
	}
	return pc + 1, true
}

// startLoop starts a loop step's count or for_each list.
func (u *User) startLoop(st *Step, pc int) (int, bool) {
	fl := st.Flow
	ls := &u.flow.loops[fl.Loop]
	ls.i, ls.items = 0, nil
	if fl.Cond == nil {
		ls.n = fl.Count
		return pc + 1, true
	}
	items, err := u.listOf(fl.Cond)
	if err != nil {
		u.failControl(st, "for_each "+strconv.Quote(fl.Cond.Source)+": "+err.Error())
		return 0, false
	}
	ls.items, ls.n = items, len(items)
	return pc + 1, true
}

// nextInLoop goes round a loop again, with its next item, or past its end.
func (u *User) nextInLoop(fl *plan.Flow, pc int) int {
	ls := &u.flow.loops[fl.Loop]
	if ls.i >= ls.n {
		ls.items = nil
		return fl.Jump
	}
	if ls.items != nil {
		u.env.Captures[fl.Var] = itemText(ls.items[ls.i])
	}
	ls.i++
	return pc + 1
}

// failControl records a control step that could not be evaluated against
// the request step it guards, as a check failure: nothing was sent.
func (u *User) failControl(st *Step, msg string) {
	u.flow.failed = true
	if st.failID >= 0 {
		u.shard.FailUnsent(st.failID, sample.Check, msg)
	}
}

var errTooLong = errors.New("list longer than " + strconv.Itoa(plan.MaxForEach) + " items")

// listOf evaluates a for_each list: a list value, or text holding a JSON
// list (a capture).
func (u *User) listOf(e *plan.Expr) ([]any, error) {
	v, err := e.Eval(&u.env)
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok {
		if s == "" {
			return nil, nil
		}
		doc, ok := decodeItems(s) // jsonpath.go
		if !ok {
			return nil, errors.New("not a JSON list: " + strconv.Quote(cut(s, 60)))
		}
		v = doc
	}
	var items []any
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []any:
		items = x
	case []string:
		for _, s := range x {
			items = append(items, s)
		}
	case []int:
		for _, n := range x {
			items = append(items, n)
		}
	default:
		return nil, errors.New("not a list")
	}
	if len(items) > plan.MaxForEach {
		return nil, errTooLong
	}
	return items, nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// itemText is a for_each item as templates see it: text as is, anything
// else as its JSON.
func itemText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return string(plan.AppendValue(nil, v))
}

// Renewals is how many times users ran their once steps again because a
// step answered a renew_on status.
func (p *Program) Renewals() int64 { return p.renewals.Load() }

// Phase is setup or teardown compiled to run as one user, with request
// steps of its own for its own recorder.
type Phase struct {
	prog *Program
	sc   *Scenario
	// stream, when set, is the phase user's generator stream in place of
	// its number (SetSeed).
	stream uint64
	// Steps are the phase's request steps, for metrics.New.
	Steps []metrics.StepInfo
}

// CompilePhase prepares setup or teardown (s) of p.
func CompilePhase(p *plan.Plan, s *plan.Scenario, base, userAgent string, tlsConf *tls.Config) (*Phase, error) {
	pp := *p
	pp.Scenarios = []*plan.Scenario{s}
	prog, err := Compile(&pp, base, userAgent, tlsConf)
	if err != nil {
		return nil, err
	}
	return &Phase{prog: prog, sc: prog.Scenarios[0], Steps: prog.Steps}, nil
}

// Run runs the phase once as one user reading globals (the setup's
// captures; nil for setup itself) and returns the captures it made. failed
// says a step failed; the step's failure is in rec. Cancelling ctx cuts
// off the request in flight.
func (ph *Phase) Run(ctx context.Context, tr httpc.Transport, rec *metrics.Recorder, globals []string) (captures []string, failed bool) {
	u := ph.prog.NewUser(0, tr, rec)
	defer u.Close()
	if ph.stream != 0 {
		u.rng = rand.New(rand.NewPCG(ph.stream, ph.prog.Seed))
		u.env.Rand = u.rng
	}
	u.env.Globals = globals
	stopCut := context.AfterFunc(ctx, u.Interrupt)
	defer stopCut()
	err := u.Iterate(ph.sc, time.Time{}, Stop{Soft: ctx.Done()})
	failed = err != nil || u.flow.failed || ctx.Err() != nil
	return append([]string(nil), u.env.Captures[:ph.sc.Captures]...), failed
}

// SetGlobals gives every user made from now on the setup's captures.
func (p *Program) SetGlobals(g []string) { p.globals = g }

func renews(on []plan.StatusMatch, code int) bool {
	for _, m := range on {
		if m.Matches(code) {
			return true
		}
	}
	return false
}

// Draw is one draw from d with the user's own generator (a drawn pace), so
// a run given the same seed draws the same intervals.
func (u *User) Draw(d *plan.ThinkDist) time.Duration { return d.Draw(u.rng) }
