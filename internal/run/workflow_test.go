package run

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// lifecycleServer counts requests by method and path; /fixtures creates
// one, /fixtures/{id} deletes it; /fail answers 500.
type lifecycleServer struct {
	mu   sync.Mutex
	hits map[string]int
	// order is the sequence of setup/teardown/load requests as seen.
	order []string
}

func (l *lifecycleServer) serve(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	key := r.Method + " " + r.URL.Path
	l.mu.Lock()
	l.hits[key]++
	if len(l.order) == 0 || l.order[len(l.order)-1] != key {
		l.order = append(l.order, key)
	}
	l.mu.Unlock()
	switch r.URL.Path {
	case "/fixtures":
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"f1"}`)
	case "/fail":
		w.WriteHeader(http.StatusInternalServerError)
	case "/load":
		if r.Header.Get("X-Fixture") != "f1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, "ok")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (l *lifecycleServer) get(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits[key]
}

const lifecyclePlan = `
setup:
  - name: create
    post: /fixtures
    capture: {fixture: {json: id}}
teardown:
  - name: delete
    delete: /fixtures/{{ fixture }}
scenarios:
  s:
    steps:
      - name: load
        get: /load
        headers: {X-Fixture: "{{ fixture }}"}
      - think: 20ms
load: {grace: 1s, stages: [{duration: 400ms, users: 2}]}
`

// Setup runs once before the load, every user reads its capture, the
// teardown runs once after, and their requests are reported apart.
func TestSetupAndTeardownAroundTheLoad(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	p := mustPlan(t, "target: "+srv.URL+"\n"+lifecyclePlan)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, res)
	if l.get("POST /fixtures") != 1 || l.get("DELETE /fixtures/f1") != 1 {
		t.Fatalf("hits %v: want one setup and one teardown request", l.hits)
	}
	if got := l.order[0]; got != "POST /fixtures" {
		t.Errorf("first request %q, want the setup's", got)
	}
	if got := l.order[len(l.order)-1]; got != "DELETE /fixtures/f1" {
		t.Errorf("last request %q, want the teardown's", got)
	}
	load := int64(l.get("GET /load"))
	if load == 0 || res.Totals.Requests != load || res.Totals.Failed != 0 {
		t.Errorf("load: %d requests (%d failed) in the result, server saw %d", res.Totals.Requests, res.Totals.Failed, load)
	}
	if len(res.Steps) != 1 || res.Steps[0].Name != "load" {
		t.Errorf("load steps %+v: setup and teardown must not be among them", res.Steps)
	}
	wf := res.Workflow
	if wf == nil || wf.Setup == nil || wf.Teardown == nil {
		t.Fatalf("workflow %+v", wf)
	}
	if wf.Setup.Requests != 1 || wf.Setup.Failed != 0 || wf.Setup.Steps[0].Name != "create" || wf.Setup.Error != "" {
		t.Errorf("setup %+v", wf.Setup)
	}
	if wf.Teardown.Requests != 1 || wf.Teardown.Steps[0].Name != "delete" || wf.Teardown.Error != "" {
		t.Errorf("teardown %+v", wf.Teardown)
	}
}

// A failing setup stops the run before any load, saying which step failed.
func TestSetupFailureStopsBeforeLoad(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	p := mustPlan(t, "target: "+srv.URL+"\n"+strings.Replace(lifecyclePlan, "post: /fixtures", "post: /fail", 1))
	res, err := Run(context.Background(), p, Options{})
	if !errors.Is(err, ErrSetup) || res != nil {
		t.Fatalf("err = %v, res = %v; want ErrSetup and no result", err, res)
	}
	if !strings.Contains(err.Error(), `step "create" (test.yaml:4:5) failed`) || !strings.Contains(err.Error(), "500") {
		t.Errorf("message %q: want the step, its place and the status", err)
	}
	if n := l.get("GET /load"); n != 0 {
		t.Errorf("%d load requests after a failed setup, want 0", n)
	}
	if n := l.get("DELETE /fixtures/f1") + l.get("DELETE /fixtures/"); n != 0 {
		t.Errorf("teardown ran %d times after a failed setup, want 0", n)
	}
}

// The teardown also runs when the run is interrupted (Ctrl-C).
func TestTeardownAfterInterrupt(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	p := mustPlan(t, "target: "+srv.URL+"\n"+strings.Replace(lifecyclePlan, "duration: 400ms", "duration: 1h", 1))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Interrupt once the load has begun.
		for l.get("GET /load") == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Run.Partial {
		t.Errorf("result not partial after an interrupt")
	}
	if n := l.get("DELETE /fixtures/f1"); n != 1 {
		t.Fatalf("teardown ran %d times after an interrupt, want 1", n)
	}
	if res.Workflow == nil || res.Workflow.Teardown == nil || res.Workflow.Teardown.Requests != 1 {
		t.Errorf("workflow %+v", res.Workflow)
	}
}

// A teardown that does not finish is cut off at TeardownTimeout: the run
// still returns, with the teardown's error in the result.
func TestTeardownBoundedByTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			l.serve(httptestDiscard{}, r)
			<-release // never answers while the run waits
			return
		}
		l.serve(w, r)
	})
	defer func(d time.Duration) { TeardownTimeout = d }(TeardownTimeout)
	TeardownTimeout = 300 * time.Millisecond
	p := mustPlan(t, "target: "+srv.URL+"\n"+lifecyclePlan)
	res, err := Run(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.get("DELETE /fixtures/f1") != 1 {
		t.Fatalf("teardown not sent: %v", l.hits)
	}
	td := res.Workflow.Teardown
	if td == nil || td.Error == "" || td.Requests != 1 || td.Steps[0].ByClass["interrupted"] != 1 {
		t.Fatalf("teardown %+v: want its request cut off and an error", td)
	}
}

// httptestDiscard lets the hanging handler count its request without
// answering it.
type httptestDiscard struct{}

func (httptestDiscard) Header() http.Header         { return http.Header{} }
func (httptestDiscard) Write(b []byte) (int, error) { return len(b), nil }
func (httptestDiscard) WriteHeader(int)             {}

// The captures a coordinator's setup made reach a segment process by
// name (HandOff, Received): the segment reads the setup's values and
// runs no setup or teardown of its own; a plan whose setup captures a
// name the coordinator's did not is refused rather than run without it.
func TestSetupCapturesHandedToSegments(t *testing.T) {
	l := &lifecycleServer{hits: map[string]int{}}
	srv, _ := countingServer(t, l.serve)
	p := mustPlan(t, "target: "+srv.URL+"\n"+lifecyclePlan)
	lc, ph, err := Setup(context.Background(), p, Options{})
	if err != nil || ph == nil || ph.Requests != 1 {
		t.Fatalf("setup: %+v, %v", ph, err)
	}
	env, done, err := lc.HandOff(p, t.TempDir())
	// The captures, and when the setup ended (SetupEndedEnv).
	if err != nil || len(env) != 2 {
		t.Fatalf("handoff %v, %v", env, err)
	}
	defer done()
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	got, err := Received(p, os.LookupEnv)
	if err != nil || got == nil {
		t.Fatalf("received %v, %v", got, err)
	}
	res, err := Run(context.Background(), p, Options{Lifecycle: got})
	if err != nil {
		t.Fatal(err)
	}
	if l.get("POST /fixtures") != 1 || l.get("DELETE /fixtures/f1") != 0 || res.Totals.Failed != 0 || res.Totals.Requests == 0 {
		t.Fatalf("hits %v, load %d requests %d failed: want the segment to use the setup's capture and run no setup or teardown",
			l.hits, res.Totals.Requests, res.Totals.Failed)
	}
	if w := res.Workflow; w == nil || w.Setup != nil || w.Teardown != nil {
		t.Errorf("segment's workflow %+v: the setup and teardown are the coordinator's", w)
	}
	if lc.Teardown(p, Options{}) == nil || lc.Teardown(p, Options{}) != nil || l.get("DELETE /fixtures/f1") != 1 {
		t.Errorf("coordinator's teardown: want one, once; hits %v", l.hits)
	}
	other := mustPlan(t, "target: "+srv.URL+"\n"+strings.ReplaceAll(lifecyclePlan, "fixture", "thing"))
	if _, err := Received(other, os.LookupEnv); err == nil || !strings.Contains(err.Error(), `"thing"`) {
		t.Errorf("a plan capturing another name: %v, want it refused naming the capture", err)
	}
}
