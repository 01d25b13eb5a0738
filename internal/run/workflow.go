package run

import (
	"context"
	"errors"
	"fmt"
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
}

// runPhase runs setup or teardown as one user with a recorder of its own,
// so its requests are reported apart from the load's.
func (r *runner) runPhase(ctx context.Context, s *plan.Scenario, globals []string) (*result.Phase, []string, error) {
	ph, err := vu.CompilePhase(r.plan, s, r.base, "stampede/"+r.opts.Version, r.opts.TLS)
	if err != nil {
		return nil, nil, err
	}
	rec := metrics.New(ph.Steps, r.opts.Interval.Seconds())
	rec.Configure(r.opts.Errors)
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
		if i < len(s.Steps) {
			for _, ps := range s.Steps {
				if ps.Kind == plan.StepRequest && ps.Name == st.Name {
					where = " (" + ps.Pos.String() + ")"
					break
				}
			}
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

// setupPhase runs the plan's setup before any load. Its captures become
// read-only values every user sees. A failed setup stops the run.
func (r *runner) setupPhase(ctx context.Context) error {
	if r.plan.Setup == nil {
		return nil
	}
	ph, caps, err := r.runPhase(ctx, r.plan.Setup, nil)
	if err != nil {
		return err
	}
	r.wf.mu.Lock()
	r.wf.setup = ph
	r.wf.mu.Unlock()
	if ph.Error != "" {
		return fmt.Errorf("%w: %s; no load was sent", ErrSetup, ph.Error)
	}
	r.prog.SetGlobals(caps)
	r.wf.globals = caps
	return nil
}

// teardownPhase runs the plan's teardown after the load, also after
// Ctrl-C, within TeardownTimeout.
func (r *runner) teardownPhase() {
	if r.plan.Teardown == nil || r.wf.tornDown {
		return
	}
	r.wf.tornDown = true
	ctx, cancel := context.WithTimeout(context.Background(), TeardownTimeout)
	defer cancel()
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
