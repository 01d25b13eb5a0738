package e2e

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/demo"
	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// demoTarget is the demo service on loopback, for the examples to run
// against (as TARGET) while the test reads what it saw.
func demoTarget(t *testing.T) (*demo.Server, string) {
	d := demo.New(demo.Options{})
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	return d, srv.URL
}

// runExample runs examples/NAME.yaml against target and returns the
// outcome and the result.
func runExample(t *testing.T, name, target string) (e2etest.Outcome, *result.Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	o := e2etest.Start(t, "", []string{"TARGET=" + target}, "run", filepath.Join("examples", name+".yaml"), "-o", out).Wait(t, 120*time.Second)
	if o.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", o.Code, o)
	}
	return o, e2etest.ReadResult(t, out)
}

func wfStep(r *result.Result, name string) *result.Step {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i]
		}
	}
	return nil
}

// Each user logs in once, whatever the number of iterations; its first
// token expires after one request, so it renews exactly once, and the
// renewals are counted in the result and the summary.
func TestWorkflowLoginOnce(t *testing.T) {
	d, target := demoTarget(t)
	o, r := runExample(t, "login-once", target)
	st := d.AuthStatsOf()
	users := r.Run.MaxUsers
	if users != 4 || len(st.Logins) != users {
		t.Fatalf("%d users, logins %v: want 4 users who each logged in", users, st.Logins)
	}
	for u, n := range st.Logins {
		if n != 2 {
			t.Errorf("%s logged in %d times, want 2 (the first login and one renewal)", u, n)
		}
	}
	if r.Workflow == nil || r.Workflow.Renewals != int64(users) {
		t.Fatalf("workflow %+v, want %d renewals", r.Workflow, users)
	}
	if !strings.Contains(o.Stdout, "Renewals: 4 ") {
		t.Errorf("summary lacks the renewals:\n%s", o.Stdout)
	}
	login := wfStep(r, "login")
	if login == nil || login.Requests != int64(2*users) || login.Failed != 0 {
		t.Errorf("login step %+v, want %d requests", login, 2*users)
	}
	// Every 401 the demo sent was a renewal's trigger; none is a failure.
	if st.Unauthorized != int64(users) || r.Totals.Failed != 0 {
		t.Errorf("demo sent %d 401s, result has %d failures; want %d and 0", st.Unauthorized, r.Totals.Failed, users)
	}
	items := wfStep(r, "items").Requests + wfStep(r, "items again").Requests
	if items != st.Requests["GET /auth/items"]+st.Unauthorized {
		t.Errorf("result counts %d item requests, the demo saw %d", items, st.Requests["GET /auth/items"]+st.Unauthorized)
	}
}

// Setup runs once before the load and its capture reaches every user;
// teardown runs once after; their requests are reported apart.
func TestWorkflowSetupTeardown(t *testing.T) {
	d, target := demoTarget(t)
	o, r := runExample(t, "setup-teardown", target)
	st := d.AuthStatsOf()
	if st.Created != 1 || st.Deleted != 1 || st.Fixtures != 0 {
		t.Fatalf("demo fixtures: created %d, deleted %d, live %d; want 1, 1, 0", st.Created, st.Deleted, st.Fixtures)
	}
	if st.Logins["admin"] != 1 {
		t.Errorf("admin logged in %d times, want 1", st.Logins["admin"])
	}
	wf := r.Workflow
	if wf == nil || wf.Setup == nil || wf.Teardown == nil || wf.Setup.Requests != 2 || wf.Teardown.Requests != 1 || wf.Setup.Failed+wf.Teardown.Failed != 0 {
		t.Fatalf("workflow %+v", wf)
	}
	read := wfStep(r, "read fixture")
	if len(r.Steps) != 1 || read == nil || read.Requests == 0 || read.Failed != 0 {
		t.Fatalf("load steps %+v: want only the read, all passing", r.Steps)
	}
	if read.Requests != st.Requests["GET /auth/items/{id}"] || r.Totals.Requests != read.Requests {
		t.Errorf("result counts %d reads (%d in all), the demo saw %d", read.Requests, r.Totals.Requests, st.Requests["GET /auth/items/{id}"])
	}
	if !strings.Contains(o.Stdout, "Setup: 2 requests, 0 failed") || !strings.Contains(o.Stdout, "Teardown: 1 request, 0 failed") {
		t.Errorf("summary lacks setup and teardown:\n%s", o.Stdout)
	}
}

// A failing setup stops the run with exit 3 before any load.
func TestWorkflowSetupFailure(t *testing.T) {
	d, target := demoTarget(t)
	plan := e2etest.WritePlan(t, `
target: `+target+`
setup:
  - name: create fixture
    post: /auth/no-such-route
    capture: {fixture: {json: id}}
teardown:
  - delete: /auth/fixtures/{{ fixture }}
scenarios:
  s:
    steps:
      - get: /healthz
load: {stages: [{duration: 2s, users: 2}]}
`, nil)
	o := e2etest.Stampede(t, 60*time.Second, "", "run", plan, "-q", "-o", filepath.Join(t.TempDir(), "r.json"))
	if o.Code != 3 {
		t.Fatalf("exit %d, want 3\n%s", o.Code, o)
	}
	if !strings.Contains(o.Stderr, `setup failed: step "create fixture" (`) || !strings.Contains(o.Stderr, "404") || !strings.Contains(o.Stderr, "no load was sent") {
		t.Errorf("stderr lacks the failed step, its status and that no load was sent:\n%s", o.Stderr)
	}
	if n := d.Stats().Requests[demo.RouteHealthz]; n != 0 {
		t.Errorf("the demo saw %d load requests after a failed setup, want 0", n)
	}
}

// Control flow sends exactly what it says: for_each over the 3 ids makes
// 3 requests per pass, an if that is false sends and records nothing,
// repeat 2 sends 2, and choose takes one branch per pass.
func TestWorkflowBranches(t *testing.T) {
	d, target := demoTarget(t)
	_, r := runExample(t, "branches", target)
	st := d.AuthStatsOf()
	list, item, health := wfStep(r, "list"), wfStep(r, "item"), wfStep(r, "health")
	browse, checkout := wfStep(r, "browse"), wfStep(r, "checkout")
	if list == nil || list.Requests == 0 || r.Totals.Failed != 0 {
		t.Fatalf("list %+v, %d failures", list, r.Totals.Failed)
	}
	passes := list.Requests
	// Each of the 3 users' last pass may be cut off by the end of the
	// stage at a loop's next pass (loops look at the stop there); every
	// other pass is whole.
	const users = 3
	whole := func(got, per int64) bool { return got <= per*passes && got >= per*(passes-users) }
	if !whole(item.Requests, 3) {
		t.Errorf("item sent %d times in %d passes, want exactly 3 per whole pass", item.Requests, passes)
	}
	if got := st.Requests["GET /auth/items/{id}"]; got != item.Requests+checkout.Requests {
		t.Errorf("the demo saw %d item requests, the result %d", got, item.Requests+checkout.Requests)
	}
	if next := wfStep(r, "next page"); next != nil && next.Requests != 0 {
		t.Errorf("the false if sent %d requests, want 0", next.Requests)
	}
	if got := st.Requests["GET /auth/items"]; got != passes {
		t.Errorf("the demo saw %d list requests, want %d: the false if must send nothing", got, passes)
	}
	if !whole(health.Requests, 2) {
		t.Errorf("repeat 2 sent %d in %d passes", health.Requests, passes)
	}
	if !whole(browse.Requests+checkout.Requests, 1) {
		t.Errorf("choose took %d+%d branches in %d passes, want one per pass", browse.Requests, checkout.Requests, passes)
	}
	if len(st.Logins) != 3 {
		t.Errorf("logins %v, want one per user of 3", st.Logins)
	}
	for u, n := range st.Logins {
		if n != 1 {
			t.Errorf("%s logged in %d times, want 1", u, n)
		}
	}
}

// A header computed by an expression signs the body the demo checks.
func TestWorkflowSignedRequests(t *testing.T) {
	d, target := demoTarget(t)
	_, r := runExample(t, "signed-requests", target)
	st := d.AuthStatsOf()
	signed, confirm := wfStep(r, "signed order"), wfStep(r, "confirm")
	if signed == nil || signed.Requests == 0 || signed.Failed != 0 {
		t.Fatalf("signed step %+v", signed)
	}
	if st.SignedOK != signed.Requests || st.SignedBad != 0 {
		t.Errorf("demo: %d good and %d bad signatures, result %d signed requests", st.SignedOK, st.SignedBad, signed.Requests)
	}
	if confirm.Requests != signed.Requests {
		t.Errorf("confirm (if status == 200) sent %d times after %d 200s", confirm.Requests, signed.Requests)
	}
}

// Ctrl-C during the load still runs the teardown, once, and the partial
// result has it.
func TestWorkflowTeardownAfterCtrlC(t *testing.T) {
	d, target := demoTarget(t)
	plan := e2etest.WritePlan(t, `
target: `+target+`
setup:
  - post: /auth/fixtures
    capture: {fixture: {json: id}}
teardown:
  - delete: /auth/fixtures/{{ fixture }}
    expect: {status: 204}
scenarios:
  s:
    steps:
      - get: /healthz?f={{ fixture }}
      - think: 20ms
load: {stages: [{duration: 10m, users: 2}], grace: 2s}
`, nil)
	out := filepath.Join(t.TempDir(), "r.json")
	p := e2etest.Start(t, "", nil, "run", plan, "-q", "-o", out)
	// Interrupt once the load has begun, as a user would.
	deadline := time.Now().Add(60 * time.Second)
	for d.Stats().Requests[demo.RouteHealthz] == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	p.Signal(t, os.Interrupt)
	o := p.Wait(t, 60*time.Second)
	if o.Code != 3 {
		t.Fatalf("exit %d after Ctrl-C, want 3\n%s", o.Code, o)
	}
	st := d.AuthStatsOf()
	if st.Created != 1 || st.Deleted != 1 || st.Fixtures != 0 {
		t.Fatalf("demo fixtures: created %d, deleted %d, live %d; want 1, 1, 0\n%s", st.Created, st.Deleted, st.Fixtures, o)
	}
	r := e2etest.ReadResult(t, out)
	if !r.Run.Partial || r.Workflow == nil || r.Workflow.Teardown == nil || r.Workflow.Teardown.Requests != 1 || r.Workflow.Teardown.Failed != 0 {
		t.Fatalf("partial %v, workflow %+v", r.Run.Partial, r.Workflow)
	}
}
