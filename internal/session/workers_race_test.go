package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/dist"
	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/run"
)

// A snapshot taken during the coordinator's teardown (a second Ctrl-C)
// has the merged load with the teardown cut off, and one taken after it
// the load with the teardown done. Execute writes the teardown into the
// load's workflow under the lock Snapshot copies it under (before, the
// copy and the write were both outside it: a data race when the second
// Ctrl-C met the teardown's end).
func TestWorkersSnapshotAroundTeardown(t *testing.T) {
	srv := newHangingPhase(t, "/teardown")
	p := phasePlan(t, srv.srv.URL, "teardown:\n  - {name: clean, delete: /teardown}")
	t.Setenv(fakeWorkerEnv, "1")
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &Workers{Plan: p, Local: dist.Local{Bin: bin, Environ: os.Environ(), Plan: "phases.yaml", Workers: 1,
		Dir: filepath.Join(t.TempDir(), "r.segments"), StartAt: time.Now()},
		Run: &run.Options{SkipPreflight: true}}
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
	snap := e.Snapshot("quit")
	srv.Release()
	r := wait(t, done, "Execute")
	if r.err != nil || r.res == nil {
		t.Fatalf("Execute: %v", r.err)
	}
	if snap == nil || snap.Totals.Requests != fakeWorkerRequests || snap.Workflow == nil || snap.Workflow.Teardown == nil ||
		!strings.Contains(snap.Workflow.Teardown.Error, "cut off") {
		t.Fatalf("snapshot during the teardown: %+v; want the merged load with the teardown cut off", snap)
	}
	if td := r.res.Workflow.Teardown; td == nil || td.Error != "" || td.Requests != 1 {
		t.Errorf("the result's teardown %+v, want the one request, done", td)
	}
	// A second Ctrl-C once the teardown has ended, before Execute's result
	// reaches the session, saves that whole load with its teardown done.
	// Before, the load was dropped as the teardown ended and the snapshot
	// fell back to the workers' checkpoints: the whole load saved as
	// partial, "quit", with no teardown.
	late := e.Snapshot("quit")
	if late == nil {
		t.Fatal("no snapshot after the teardown")
	}
	if late.Run.Partial || late.Totals.Requests != fakeWorkerRequests || late.Workflow == nil {
		t.Fatalf("snapshot after the teardown: partial %v (%q), %d requests, workflow %+v; want the whole load, complete",
			late.Run.Partial, late.Run.PartialReason, late.Totals.Requests, late.Workflow)
	}
	if td := late.Workflow.Teardown; td == nil || td.Error != "" || td.Requests != 1 {
		t.Errorf("snapshot after the teardown: teardown %+v, want the one request, done", td)
	}
}
