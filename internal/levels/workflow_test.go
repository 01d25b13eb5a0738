package levels

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/result"
)

// fixtureServer hands out a new fixture id at every POST /fixtures, so a
// setup run again shows as a second id; GET /load answers 400 unless it
// carries the first id, and DELETE /fixtures/{id} is the teardown.
type fixtureServer struct {
	mu      sync.Mutex
	created int
	hits    map[string]int
}

func (f *fixtureServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[r.Method+" "+r.URL.Path]++
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/fixtures":
		f.created++
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"f%d"}`, f.created)
	case r.URL.Path == "/load":
		if r.Header.Get("X-Fixture") != "f1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		io.WriteString(w, "ok")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fixtureServer) get(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[key]
}

func (f *fixtureServer) deletes() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, n := range f.hits {
		if len(k) > 7 && k[:7] == "DELETE " {
			out[k] = n
		}
	}
	return out
}

func fixturePlan(target string) string {
	return `name: wf
target: ` + target + `
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
        expect: {status: 200}
      - think: 20ms
load:
  grace: 1s
  stages:
    - {duration: 1s, users: 1}
`
}

// checkOnce holds the levels to one setup and one teardown: the server
// saw one fixture created and that one deleted, every load request of
// every level carried it, and the whole run's workflow says so.
func checkOnce(t *testing.T, f *fixtureServer, res *result.Result, levels int) {
	t.Helper()
	if n := f.get("POST /fixtures"); n != 1 {
		t.Errorf("setup ran %d times over %d levels, want 1", n, levels)
	}
	if d := f.deletes(); len(d) != 1 || d["DELETE /fixtures/f1"] != 1 {
		t.Errorf("teardown requests %v, want one DELETE /fixtures/f1", d)
	}
	if res == nil {
		t.Fatal("no result")
	}
	if len(res.Levels) != levels {
		t.Fatalf("%d levels, want %d", len(res.Levels), levels)
	}
	for i, l := range res.Levels {
		if l.Result == nil || l.Result.Totals.Requests == 0 {
			continue // an interrupted level may have sent nothing
		}
		if l.Result.Totals.Failed != 0 {
			t.Errorf("level %d: %d of %d load requests failed (by class %v): the setup's capture was not carried",
				i+1, l.Result.Totals.Failed, l.Result.Totals.Requests, l.Result.Totals.ByClass)
		}
		if w := l.Result.Workflow; i > 0 && w != nil && (w.Setup != nil || w.Teardown != nil) {
			t.Errorf("level %d reports its own setup/teardown %+v", i+1, w)
		}
	}
	wf := res.Workflow
	if wf == nil || wf.Setup == nil || wf.Teardown == nil {
		t.Fatalf("workflow %+v: want one setup and one teardown", wf)
	}
	if wf.Setup.Requests != 1 || len(wf.Setup.Steps) != 1 || wf.Setup.Error != "" {
		t.Errorf("setup %+v, want one request", wf.Setup)
	}
	if wf.Teardown.Requests != 1 || len(wf.Teardown.Steps) != 1 || wf.Teardown.Error != "" {
		t.Errorf("teardown %+v, want one request", wf.Teardown)
	}
}

// A sweep's setup runs before the first level only, its captures serve
// every level, and the teardown runs once after the last.
func TestSweepSetupAndTeardownOncePerTest(t *testing.T) {
	f := &fixtureServer{hits: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := mustPlan(t, fixturePlan(srv.URL))
	out, err := Run(context.Background(), p, "users", []float64{1, 1, 1}, Options{Judge: judgeLevel, Hold: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	checkOnce(t, f, out.Result, 3)
	if f.get("GET /load") == 0 {
		t.Fatal("no load was sent")
	}
}

// A gate that fails at its first level still tears down, once.
func TestGateFailingTearsDownOnce(t *testing.T) {
	f := &fixtureServer{hits: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := mustPlan(t, fixturePlan(srv.URL))
	out, err := Run(context.Background(), p, "users", []float64{1, 1, 1}, Options{
		Hold: 300 * time.Millisecond, StopAtFail: true, SLO: []string{"requests > 1000000000"}, Judge: judgeLevel,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed != 0 {
		t.Fatalf("failed at level %d, want the first", out.Failed)
	}
	checkOnce(t, f, out.Result, 1)
}

// Ctrl-C during a later level ends the levels and tears down once.
func TestInterruptedLevelsTearDownOnce(t *testing.T) {
	f := &fixtureServer{hits: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := mustPlan(t, fixturePlan(srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := Run(ctx, p, "users", []float64{1, 1, 1}, Options{
		Judge: judgeLevel,
		// The interrupt comes as the second level's hold begins.
		Hold: 300 * time.Millisecond,
		Event: func(e Event) {
			if e.Index == 1 && e.Phase == "hold" {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted {
		t.Fatal("the levels were not interrupted")
	}
	checkOnce(t, f, out.Result, 2)
}

// An interrupted level's reason names the level's own length, its ramp
// and hold. Before, it named the run's profile, which holds longer for a
// ramp that may overrun: "at 0.3s of 30.6s" for a level of 600ms.
func TestInterruptedLevelNamesItsOwnLength(t *testing.T) {
	f := &fixtureServer{hits: map[string]int{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	p := mustPlan(t, fixturePlan(srv.URL))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := Run(ctx, p, "users", []float64{1}, Options{
		Judge: judgeLevel,
		Ramp:  200 * time.Millisecond,
		Hold:  400 * time.Millisecond,
		Event: func(e Event) {
			if e.Phase == "hold" {
				cancel()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Levels) != 1 || out.Result.Levels[0].Result == nil {
		t.Fatalf("levels %+v", out.Result.Levels)
	}
	why := out.Result.Levels[0].Result.Run.PartialReason
	if !strings.Contains(why, "interrupted") || !strings.HasSuffix(why, " of 600ms") {
		t.Errorf("partial reason %q: want it to end \" of 600ms\" (ramp 200ms + hold 400ms)", why)
	}
}
