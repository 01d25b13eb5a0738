package run

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// edgeWait bounds every wait of these tests; none asserts a duration.
const edgeWait = 30 * time.Second

// While the teardown runs, the load is over and was measured whole: the
// result is on disk (a checkpoint) before the teardown starts, and a
// snapshot for a quitting process (second Ctrl-C) is that complete result
// with the teardown marked cut off, not a partial one.
func TestLoadResultKeptDuringTeardown(t *testing.T) {
	inTeardown := make(chan struct{})
	release := make(chan struct{})
	var once, released sync.Once
	// A failed check must not leave the teardown hanging for edgeWait.
	defer released.Do(func() { close(release) })
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			once.Do(func() { close(inTeardown) })
			select {
			case <-release:
			case <-time.After(edgeWait):
			}
		}
		l.serve(w, r)
	})
	p := mustPlan(t, "target: "+srv.URL+"\n"+lifecyclePlan)
	var mu sync.Mutex
	var cps []*result.Result
	var h Handle
	type ran struct {
		res *result.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := Run(context.Background(), p, Options{Handle: &h, CheckpointEvery: time.Hour,
			Checkpoint: func(r *result.Result) { mu.Lock(); cps = append(cps, r); mu.Unlock() }})
		done <- ran{res, err}
	}()
	select {
	case <-inTeardown:
	case <-time.After(edgeWait):
		t.Fatal("the teardown never started")
	}
	load := int64(l.get("GET /load"))

	mu.Lock()
	var last *result.Result
	if len(cps) > 0 {
		last = cps[len(cps)-1]
	}
	mu.Unlock()
	if last == nil || last.Totals.Requests != load || last.Workflow == nil || last.Workflow.Teardown == nil {
		t.Fatalf("checkpoint before the teardown: %+v; want the whole load (%d requests) with the teardown pending", last, load)
	}
	if !strings.Contains(last.Run.PartialReason, "during the teardown") || !strings.Contains(last.Workflow.Teardown.Error, "not finished") {
		t.Errorf("checkpoint says partial %q, teardown %q: want it to say the load completed and the teardown had not", last.Run.PartialReason, last.Workflow.Teardown.Error)
	}

	snap := h.Snapshot("interrupted twice")
	if snap == nil || snap.Run.Partial || snap.Totals.Requests != load {
		t.Fatalf("snapshot during the teardown: partial %v (%q), %d requests; want complete with the load's %d",
			snap != nil && snap.Run.Partial, snap.Run.PartialReason, snap.Totals.Requests, load)
	}
	if td := snap.Workflow.Teardown; td == nil || !strings.Contains(td.Error, "cut off") || !strings.Contains(td.Error, "interrupted twice") {
		t.Errorf("snapshot's teardown %+v: want it marked cut off with the reason", td)
	}
	if err := snap.Check(); err != nil {
		t.Errorf("snapshot invariants: %v", err)
	}
	released.Do(func() { close(release) })
	var r ran
	select {
	case r = <-done:
	case <-time.After(edgeWait):
		t.Fatal("the run did not end")
	}
	if r.err != nil || r.res.Run.Partial || r.res.Workflow.Teardown == nil || r.res.Workflow.Teardown.Error != "" {
		t.Fatalf("final: err %v, result %+v", r.err, r.res)
	}
}

// A setup that created data and then failed leaves it to the teardown,
// which reads what the setup captured before it failed.
func TestTeardownAfterSetupFailedLater(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	setup := `setup:
  - name: create
    post: /fixtures
    capture: {fixture: {json: id}}
  - name: check
    get: /fail
`
	p := mustPlan(t, "target: "+srv.URL+"\n"+strings.Replace(lifecyclePlan, "setup:\n  - name: create\n    post: /fixtures\n    capture: {fixture: {json: id}}\n", setup, 1))
	_, err := Run(context.Background(), p, Options{})
	if !errors.Is(err, ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
	if n := l.get("DELETE /fixtures/f1"); n != 1 {
		t.Errorf("teardown of the created fixture sent %d times, want once (hits %v)", n, l.hits)
	}
	if l.get("GET /load") != 0 {
		t.Errorf("load sent after a failed setup")
	}

	// The same through a lifecycle (levels): its owner's Teardown is due.
	l2 := &lifecycleServer{hits: map[string]int{}}
	srv2, _ := countingServer(t, l2.serve)
	p2 := mustPlan(t, "target: "+srv2.URL+"\n"+strings.Replace(lifecyclePlan, "setup:\n  - name: create\n    post: /fixtures\n    capture: {fixture: {json: id}}\n", setup, 1))
	lc := &Lifecycle{}
	if _, err := Run(context.Background(), p2, Options{Lifecycle: lc}); !errors.Is(err, ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
	if ph := lc.Teardown(p2, Options{}); ph == nil || l2.get("DELETE /fixtures/f1") != 1 {
		t.Errorf("lifecycle teardown %+v, hits %v: want the fixture deleted once", ph, l2.hits)
	}

	// And for the coordinator of --workers, whose Setup tears down itself.
	l3 := &lifecycleServer{hits: map[string]int{}}
	srv3, _ := countingServer(t, l3.serve)
	p3 := mustPlan(t, "target: "+srv3.URL+"\n"+strings.Replace(lifecyclePlan, "setup:\n  - name: create\n    post: /fixtures\n    capture: {fixture: {json: id}}\n", setup, 1))
	if _, _, err := Setup(context.Background(), p3, Options{}); !errors.Is(err, ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
	if l3.get("DELETE /fixtures/f1") != 1 {
		t.Errorf("coordinator's failed setup not torn down: hits %v", l3.hits)
	}
}

// Ctrl-C during the setup is an interruption, not a failure, and what the
// setup created before it is torn down.
func TestCtrlCDuringSetup(t *testing.T) {
	inSecond := make(chan struct{})
	var once sync.Once
	l := &lifecycleServer{hits: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(inSecond) })
			select {
			case <-r.Context().Done():
			case <-time.After(edgeWait):
			}
			return
		}
		l.serve(w, r)
	})
	setup := `setup:
  - name: create
    post: /fixtures
    capture: {fixture: {json: id}}
  - name: wait
    get: /slow
`
	p := mustPlan(t, "target: "+srv.URL+"\n"+strings.Replace(lifecyclePlan, "setup:\n  - name: create\n    post: /fixtures\n    capture: {fixture: {json: id}}\n", setup, 1))
	go func() {
		select {
		case <-inSecond:
			cancel()
		case <-time.After(edgeWait):
		}
	}()
	_, err := Run(ctx, p, Options{})
	if !errors.Is(err, ErrSetupCut) || errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "setup cut off by Ctrl-C") {
		t.Fatalf("err = %v, want the setup reported cut off by Ctrl-C, not failed", err)
	}
	if n := l.get("DELETE /fixtures/f1"); n != 1 {
		t.Errorf("teardown after the cut-off setup sent %d times, want once (hits %v)", n, l.hits)
	}
}

// A failing setup step is named with its own place, also when it is
// nested in a group or shares its name with an earlier step.
func TestSetupFailureNamesTheStepsOwnPlace(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	src := "target: " + srv.URL + `
setup:
  - name: make
    post: /fixtures
    capture: {fixture: {json: id}}
  - repeat: 1
    steps:
      - name: make
        get: /fail
scenarios:
  s:
    steps: [{get: /load}]
load: {stages: [{duration: 100ms, users: 1}]}
`
	p := mustPlan(t, src)
	_, err := Run(context.Background(), p, Options{})
	if !errors.Is(err, ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
	// The second "make", line 8 column 9 in the plan above (line 1 is
	// the target), not the first one at 3:5.
	if !strings.Contains(err.Error(), `step "make" (test.yaml:8:9) failed`) {
		t.Errorf("message %q: want the failing step's own place, test.yaml:8:9", err)
	}
}

// Lateness is the process's own, judged when it comes up; a setup that
// outlasts the start's lead and grace does not make the segment late.
func TestSetupLongerThanStartLead(t *testing.T) {
	// The process comes up well within the lead; only the setup outlasts
	// it.
	startAt := time.Now().Add(time.Second)
	grace := 500 * time.Millisecond
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fixtures" {
			// The setup ends only once the start and its grace are past.
			if d := time.Until(startAt.Add(grace + 200*time.Millisecond)); d > 0 {
				time.Sleep(d)
			}
		}
		l.serve(w, r)
	})
	// The load outlasts the setup's overrun: the segment joins the shared
	// schedule where it stands when its setup ends.
	p := mustPlan(t, "target: "+srv.URL+"\n"+strings.Replace(lifecyclePlan, "duration: 400ms", "duration: 3s", 1))
	res, err := Run(context.Background(), p, Options{StartAt: startAt, StartGrace: grace})
	if err != nil {
		t.Fatalf("a setup longer than the start's lead failed the run: %v", err)
	}
	if res.Totals.Requests == 0 || l.get("DELETE /fixtures/f1") != 1 {
		t.Errorf("load %d requests, teardown %d: want the load run and torn down", res.Totals.Requests, l.get("DELETE /fixtures/f1"))
	}

	// A process that comes up late is refused before its setup runs, and
	// the message says so.
	l2 := &lifecycleServer{hits: map[string]int{}}
	srv2, _ := countingServer(t, l2.serve)
	p2 := mustPlan(t, "target: "+srv2.URL+"\n"+lifecyclePlan)
	_, err = Run(context.Background(), p2, Options{StartAt: time.Now().Add(-time.Hour), StartGrace: grace})
	if !errors.Is(err, ErrLateStart) || !strings.Contains(err.Error(), "came up") || !strings.Contains(err.Error(), "before its setup") {
		t.Fatalf("err = %v, want ErrLateStart saying the process came up late, before its setup", err)
	}
	if n := l2.get("POST /fixtures"); n != 0 {
		t.Errorf("a late segment ran its setup %d times, want 0", n)
	}
}
