package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/levels"
	"github.com/stampede-load/stampede/internal/plan"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// A snapshot of a levels run during its teardown has the levels whole
// with the teardown cut off; one taken once Execute is over (a second
// Ctrl-C as the run ends, before the session has its result) has the
// teardown as it ended. Before, Execute dropped the load as it returned,
// and that snapshot read the levels back as a partial with no teardown.
func TestLevelsSnapshotAroundTeardown(t *testing.T) {
	srv := newHangingPhase(t, "/teardown")
	p := phasePlan(t, srv.srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	e := &Levels{Plan: p, Vary: plan.VaryUsers, Values: []float64{1},
		Options: levels.Options{Run: run.Options{SkipPreflight: true}, Hold: 100 * time.Millisecond, SLO: []string{"error_rate < 100%"}}}
	type ran struct {
		res *result.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := e.Execute(context.Background(), Control{})
		done <- ran{res, err}
	}()
	wait(t, srv.entered, "the teardown's request")
	during := e.Snapshot("quit")
	srv.Release()
	r := wait(t, done, "Execute")
	if r.err != nil || r.res == nil {
		t.Fatalf("Execute: %v", r.err)
	}
	if during == nil || during.Workflow == nil || during.Workflow.Teardown == nil || !strings.Contains(during.Workflow.Teardown.Error, "cut off") {
		t.Fatalf("snapshot during the teardown: %+v; want the teardown cut off", during)
	}
	late := e.Snapshot("quit")
	if late == nil {
		t.Fatal("no snapshot after the run")
	}
	if late.Run.Partial || late.Totals.Requests != r.res.Totals.Requests || late.Workflow == nil {
		t.Fatalf("snapshot after the run: partial %v (%q), %d requests (the run's %d), workflow %+v; want the whole run",
			late.Run.Partial, late.Run.PartialReason, late.Totals.Requests, r.res.Totals.Requests, late.Workflow)
	}
	if td := late.Workflow.Teardown; td == nil || td.Error != "" || td.Requests != 1 {
		t.Errorf("snapshot after the run: teardown %+v, want its one request, done", td)
	}
	if g := e.Judge(late); g.Incomplete {
		t.Errorf("the snapshot after the run is judged incomplete: %+v", g)
	}
}
