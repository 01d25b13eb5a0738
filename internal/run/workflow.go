package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/vu"
)

// TeardownTimeout bounds the teardown, which also runs after Ctrl-C: a
// user who stopped a test wants the process back, cleaned up or not.
var TeardownTimeout = 30 * time.Second

// ErrSetup means the plan's setup failed; no load was sent.
var ErrSetup = errors.New("setup failed")

// Phase is the part of a test that runs. Ctrl-C does something else in
// each: it cuts the setup off (no load is sent), stops the load
// gracefully, and leaves the teardown going, within TeardownTimeout.
type Phase int32

const (
	PhaseLoad Phase = iota
	PhaseSetup
	PhaseTeardown
	// PhaseCleanup is the teardown when no load was sent: the setup
	// failed or was cut off, or the run ended before its load began.
	PhaseCleanup
)

// enter tells Options.OnPhase that phase p starts.
func enter(o Options, p Phase) {
	if o.OnPhase != nil {
		o.OnPhase(p)
	}
}

// LateStartTolerance is how late after its start time a load may begin
// without a note in the result (RunInfo.LateStartS): a timer's wake-up on
// a busy machine, not a setup that overran the start.
const LateStartTolerance = 100 * time.Millisecond

// lateStart is how far into its shared schedule, which started at start,
// a load beginning now is; 0 within LateStartTolerance.
func lateStart(start time.Time) time.Duration {
	late := time.Since(start)
	if late <= LateStartTolerance {
		return 0
	}
	return late.Round(time.Millisecond)
}

// missedProfile is the partial reason of a load that began after its
// whole profile was over on the shared schedule: nothing was sent.
func missedProfile(late, total time.Duration) string {
	return fmt.Sprintf("the load began %v after its start time (--start-at), past the end of the %v profile: nothing was sent", late, total)
}

// workflow holds the setup's and teardown's outcomes for the result.
type workflow struct {
	// mu guards setup and teardown against a partial result built while
	// the teardown runs (a second Ctrl-C).
	mu              sync.Mutex
	setup, teardown *result.Phase
	globals         []string // the setup's captures
	// tornDown: the teardown has run, on the way out of the run or, when
	// the run failed to start after its setup, from Run's defer.
	tornDown bool
	// noLoad: no load was sent before the teardown (a Lifecycle's whose
	// setup did not succeed), so it runs as PhaseCleanup.
	noLoad bool
}

// runPhase runs setup or teardown as one user with a recorder of its own,
// so its requests are reported apart from the load's.
func (r *runner) runPhase(ctx context.Context, s *plan.Scenario, globals []string) (*result.Phase, []string, error) {
	ph, err := vu.CompilePhase(r.plan, s, r.base, "stampede/"+r.opts.Version, r.opts.TLS)
	if err != nil {
		return nil, nil, err
	}
	// The run's seed, so seed: reproduces the setup's uuids as the load's.
	seed := uint64(0)
	if r.prog != nil {
		seed = r.prog.Seed
	} else {
		seed = runSeed(r.plan, r.opts.Carry)
	}
	ph.SetSeed(seed, s == r.plan.Teardown)
	rec := metrics.New(ph.Steps, r.opts.Interval.Seconds())
	eo := r.opts.Errors
	// Its failure samples index the phase's steps, not the load's.
	eo.Phase = metrics.PhaseSetup
	if s == r.plan.Teardown {
		eo.Phase = metrics.PhaseTeardown
	}
	rec.Configure(eo)
	caps, failed := ph.Run(ctx, r.shared.NewTransport(), rec, globals)
	snap := rec.Snapshot()
	out := &result.Phase{Requests: snap.Totals.Requests, Failed: snap.Totals.Failed, Steps: snap.Steps}
	if failed {
		out.Error = phaseFailure(s, snap.Steps, ctx.Err())
	}
	return out, caps, nil
}

// phaseFailure says which step failed and how, from its recorded errors.
func phaseFailure(s *plan.Scenario, steps []result.Step, ctxErr error) string {
	for i, st := range steps {
		if st.Failed == 0 {
			continue
		}
		where := ""
		if ps := requestStep(s, i); ps != nil {
			where = " (" + ps.Pos.String() + ")"
		}
		var msgs []string
		for _, e := range st.Errors {
			msgs = append(msgs, e.Message)
		}
		for class := range st.ByClass {
			if class != "ok" && len(msgs) == 0 {
				msgs = append(msgs, class)
			}
		}
		return fmt.Sprintf("step %q%s failed: %s", st.Name, where, strings.Join(msgs, "; "))
	}
	if ctxErr != nil {
		return "cut off: " + ctxErr.Error()
	}
	return "a step failed"
}

// requestStep is the id-th request step of s, the one recorded as step
// id: steps are numbered in the order they are laid out (vu.Compile),
// nested ones included, so two steps of one name are told apart.
func requestStep(s *plan.Scenario, id int) *plan.Step {
	for _, ps := range s.Steps {
		if ps.Kind != plan.StepRequest {
			continue
		}
		if id == 0 {
			return ps
		}
		id--
	}
	return nil
}

// Lifecycle makes several runs of one plan one test for its setup and
// teardown, as the levels of a gate, sweep or capacity search are: setup
// creates test data, and creating it again at every level would leave N
// copies behind and give later levels other ids than the first. The first
// run given a lifecycle runs the setup and keeps its captures; later runs
// reuse them and report no setup of their own; no run tears down, the
// owner calls Teardown once after the last. Runs given one lifecycle run
// one after another.
type Lifecycle struct {
	mu sync.Mutex
	// setUp: a run's setup succeeded (or the plan has none), so globals
	// are the test's and the teardown is due.
	setUp   bool
	globals []string
	// begun: a setup ran, even one that failed or was cut off; what its
	// first steps created is there, so the teardown is due.
	begun bool
	// given: the setup ran elsewhere (a distributed run's coordinator),
	// which also tears down.
	given    bool
	tornDown bool
	// handed is when the coordinator's setup handed its captures over
	// (HandOff; zero when not known): a segment's own lateness is
	// judged from it when the setup ended after the start time.
	handed time.Time
}

// GivenSetup is the lifecycle of a run whose setup ran elsewhere, in the
// process that coordinates it, with these captures: the run sends neither
// setup nor teardown.
func GivenSetup(globals []string) *Lifecycle {
	return &Lifecycle{setUp: true, given: true, globals: globals}
}

// Globals are the setup's captures once a run's setup succeeded; ok is
// false before.
func (lc *Lifecycle) Globals() (globals []string, ok bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.globals, lc.setUp
}

// Teardown runs the plan's teardown once for every run given lc, with the
// setup's captures, within TeardownTimeout whatever ended the runs
// (Ctrl-C, a failing gate). It returns nil when there is nothing to tear
// down: no teardown in the plan, no run got past its setup, it ran
// already, or it is the coordinator's.
func (lc *Lifecycle) Teardown(p *plan.Plan, o Options) *result.Phase {
	lc.mu.Lock()
	due := p.Teardown != nil && (lc.setUp || lc.begun) && !lc.given && !lc.tornDown
	lc.tornDown = lc.tornDown || due
	globals := lc.globals
	lc.mu.Unlock()
	if !due {
		return nil
	}
	r := phaseRunner(p, o)
	defer r.shared.Close()
	r.wf.globals = globals
	r.wf.noLoad = !lc.setUp
	r.tearDown()
	return r.wf.teardown
}

// SetupEnv is the environment variable through which the coordinator of a
// distributed run (--workers) hands its setup's captures to its segments,
// as JSON of capture name to value; SetupFileEnv names a file holding the
// same, for captures too long for one variable. The setup then runs once
// for the test, not once in every segment.
const (
	SetupEnv     = "STAMPEDE_SETUP_CAPTURES"
	SetupFileEnv = "STAMPEDE_SETUP_CAPTURES_FILE"
	// SetupEndedEnv is when the coordinator handed the captures over
	// (Unix nanoseconds), so that a segment started after a setup that
	// overran the start time does not take the setup's lateness for its
	// own (checkLate).
	SetupEndedEnv = "STAMPEDE_SETUP_ENDED"
)

// Setup runs p's setup on its own, before any load, for a process that
// coordinates a distributed run: it gives the segments the captures
// (Captures, GivenSetup) and calls the lifecycle's Teardown after them. ph
// is nil when p has no setup. A failed setup is ErrSetup, as in Run.
func Setup(ctx context.Context, p *plan.Plan, o Options) (lc *Lifecycle, ph *result.Phase, err error) {
	lc = &Lifecycle{}
	if p.Setup != nil {
		r := phaseRunner(p, o)
		defer r.shared.Close()
		enter(o, PhaseSetup)
		ph, lc.globals, err = r.runPhase(ctx, p.Setup, nil)
		enter(o, PhaseLoad)
		if err != nil {
			return nil, nil, err
		}
		if ph.Error != "" {
			// Judged before the teardown: a Ctrl-C during the teardown
			// (which cancels ctx) must not turn a setup that failed into
			// one that was cut off, and hide why it failed.
			err := setupErr(ctx, ph)
			// What the setup's first steps created is cleaned up here:
			// no segment will run to be torn down after.
			lc.begun = createdSome(ph)
			lc.Teardown(p, o)
			return nil, ph, err
		}
	}
	lc.setUp = true
	return lc, ph, nil
}

// Captures are the setup's captures by name, for GivenSetup in another
// process.
func (lc *Lifecycle) Captures(p *plan.Plan) map[string]string {
	out := map[string]string{}
	if p.Setup == nil {
		return out
	}
	globals, _ := lc.Globals()
	for i, name := range p.Setup.CaptureNames {
		if i < len(globals) {
			out[name] = globals[i]
		}
	}
	return out
}

// GivenCaptures is GivenSetup from the captures by name another process's
// setup made (Captures): every capture of p's setup must be there, or the
// segment would run with another plan's values, or none.
func GivenCaptures(p *plan.Plan, caps map[string]string) (*Lifecycle, error) {
	if p.Setup == nil {
		return GivenSetup(nil), nil
	}
	globals := make([]string, len(p.Setup.CaptureNames))
	for i, name := range p.Setup.CaptureNames {
		v, ok := caps[name]
		if !ok {
			return nil, fmt.Errorf("the coordinator's setup captures lack %q, which this plan's setup captures: is it the same plan?", name)
		}
		globals[i] = v
	}
	return GivenSetup(globals), nil
}

// maxSetupEnv is the longest captures text handed over in the environment:
// Linux refuses a single variable over 128 KiB when starting a process.
const maxSetupEnv = 64 << 10

// HandOff is the environment that gives segment processes this
// lifecycle's setup captures (Received): the variable itself, or, past
// maxSetupEnv, a file in dir readable only by this user, which done
// removes once the segments have ended.
func (lc *Lifecycle) HandOff(p *plan.Plan, dir string) (env []string, done func(), err error) {
	text, err := json.Marshal(lc.Captures(p))
	if err != nil {
		return nil, nil, err
	}
	ended := fmt.Sprintf("%s=%d", SetupEndedEnv, time.Now().UnixNano())
	if len(text) <= maxSetupEnv {
		return []string{SetupEnv + "=" + string(text), ended}, func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.CreateTemp(dir, "setup-captures-*.json")
	if err != nil {
		return nil, nil, err
	}
	name := f.Name()
	_, werr := f.Write(text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(name)
		return nil, nil, werr
	}
	return []string{SetupFileEnv + "=" + name, ended}, func() { os.Remove(name) }, nil
}

// Received is the lifecycle a coordinator handed this process (HandOff):
// its setup's captures, with no setup or teardown to run here; nil when
// none was handed over. env reads this process's environment.
func Received(p *plan.Plan, env func(string) (string, bool)) (*Lifecycle, error) {
	text, ok := env(SetupEnv)
	if name, isFile := env(SetupFileEnv); isFile && !ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("the coordinator's setup captures: %v", err)
		}
		text, ok = string(b), true
	}
	if !ok {
		return nil, nil
	}
	var caps map[string]string
	if err := json.Unmarshal([]byte(text), &caps); err != nil {
		return nil, fmt.Errorf("the coordinator's setup captures (%s): %v", SetupEnv, err)
	}
	lc, err := GivenCaptures(p, caps)
	if err != nil {
		return nil, err
	}
	ended, _ := env(SetupEndedEnv)
	if ns, err := strconv.ParseInt(ended, 10, 64); err == nil {
		lc.handed = time.Unix(0, ns)
	}
	return lc, nil
}

// phaseRunner is what running a setup or teardown outside a run needs.
func phaseRunner(p *plan.Plan, o Options) *runner {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Errors.Redact == nil {
		o.Errors.Redact = p.Redact
	}
	base := o.BaseURL
	if base == "" {
		base = p.Target
	}
	return &runner{plan: p, opts: o, base: base, shared: newShared(p, o)}
}

// setupPhase runs the plan's setup before any load. Its captures become
// read-only values every user sees. A failed setup stops the run.
func (r *runner) setupPhase(ctx context.Context) error {
	lc := r.opts.Lifecycle
	if lc != nil {
		if globals, ok := lc.Globals(); ok {
			r.prog.SetGlobals(globals)
			r.wf.globals = globals
			return nil
		}
	}
	if r.plan.Setup != nil {
		enter(r.opts, PhaseSetup)
		ph, caps, err := r.runPhase(ctx, r.plan.Setup, nil)
		enter(r.opts, PhaseLoad)
		if err != nil {
			return err
		}
		r.wf.mu.Lock()
		r.wf.setup = ph
		r.wf.mu.Unlock()
		if ph.Error != "" {
			// The teardown reads what the setup captured before it failed;
			// a setup none of whose requests succeeded has nothing to
			// tear down (and no captures to address it by).
			r.wf.globals = caps
			r.wf.tornDown = !createdSome(ph)
			if lc != nil {
				lc.mu.Lock()
				lc.begun, lc.globals = createdSome(ph), caps
				lc.mu.Unlock()
			}
			return setupErr(ctx, ph)
		}
		r.prog.SetGlobals(caps)
		r.wf.globals = caps
	}
	if lc != nil {
		lc.mu.Lock()
		lc.setUp, lc.globals = true, r.wf.globals
		lc.mu.Unlock()
	}
	return nil
}

// teardownPhase runs the plan's teardown after the load, also after
// Ctrl-C, within TeardownTimeout; a run given a lifecycle leaves it to
// the lifecycle's owner.
func (r *runner) teardownPhase() {
	if r.opts.Lifecycle != nil {
		return
	}
	r.tearDown()
}

func (r *runner) tearDown() {
	if r.plan.Teardown == nil || r.wf.tornDown {
		return
	}
	r.wf.tornDown = true
	ctx, cancel := context.WithTimeout(context.Background(), TeardownTimeout)
	defer cancel()
	// No way back to the load: the teardown is the test's last part.
	// A run's load began when its clock started (run).
	if r.wf.noLoad || (r.prog != nil && r.start.IsZero()) {
		enter(r.opts, PhaseCleanup)
	} else {
		enter(r.opts, PhaseTeardown)
	}
	ph, _, err := r.runPhase(ctx, r.plan.Teardown, r.wf.globals)
	if err != nil {
		ph = &result.Phase{Error: err.Error()}
	}
	r.wf.mu.Lock()
	r.wf.teardown = ph
	r.wf.mu.Unlock()
}

// finishWorkflow runs the teardown after the load and adds it to the
// result.
func (r *runner) finishWorkflow(res *result.Result, err error) (*result.Result, error) {
	r.teardownPhase()
	if res != nil {
		r.workflowInto(res)
	}
	return res, err
}

// workflowInto adds the setup, teardown and renewals to a result.
func (r *runner) workflowInto(res *result.Result) {
	if r.plan.Setup == nil && r.plan.Teardown == nil && !hasRenewal(r.plan) {
		return
	}
	r.wf.mu.Lock()
	defer r.wf.mu.Unlock()
	res.Workflow = &result.Workflow{Renewals: r.prog.Renewals(), Setup: r.wf.setup, Teardown: r.wf.teardown}
}

func hasRenewal(p *plan.Plan) bool {
	for _, s := range p.Scenarios {
		if s.Flow.RenewOn != nil {
			return true
		}
	}
	return false
}
