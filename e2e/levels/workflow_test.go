package levels

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// A sweep is one test: its setup runs once before the first level and its
// teardown once after the last. The server hands out a new fixture id at
// every setup, so a setup run again at a later level shows as a second
// fixture, and that level's load (which must carry the first id) fails.
func TestSweepRunsSetupAndTeardownOnce(t *testing.T) {
	var (
		mu      sync.Mutex
		created int
		hits    = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		hits[r.Method+" "+r.URL.Path]++
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/fixtures":
			created++
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":"f%d"}`, created)
		case r.URL.Path == "/load" && r.Header.Get("X-Fixture") != "f1":
			w.WriteHeader(http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	dir, path := writePlan(t, `name: wf-sweep
target: `+srv.URL+`
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
`)
	out := filepath.Join(dir, "sweep.json")
	o := e2etest.Stampede(t, 2*time.Minute, dir, "sweep", path, "--users", "1,1,1", "--hold", "400ms", "-o", out)
	if o.Code != 0 {
		t.Fatalf("want exit 0\n%s", o)
	}
	mu.Lock()
	setups, deletes := hits["POST /fixtures"], 0
	var deleted []string
	for k, n := range hits {
		if strings.HasPrefix(k, "DELETE ") {
			deletes += n
			deleted = append(deleted, k)
		}
	}
	mu.Unlock()
	if setups != 1 || deletes != 1 || hits["DELETE /fixtures/f1"] != 1 {
		t.Errorf("server saw %d setups and %d teardowns (%v); want one of each, over three levels", setups, deletes, deleted)
	}
	res := e2etest.ReadResult(t, out)
	if len(res.Levels) != 3 {
		t.Fatalf("%d levels, want 3\n%s", len(res.Levels), o)
	}
	for i, l := range res.Levels {
		if l.Result == nil || l.Result.Totals.Requests == 0 || l.Result.Totals.Failed != 0 {
			t.Errorf("level %d: %+v: want load sent with the setup's fixture and none failed", i+1, l.Result.Totals)
		}
	}
	wf := res.Workflow
	if wf == nil || wf.Setup == nil || wf.Teardown == nil || wf.Setup.Requests != 1 || wf.Teardown.Requests != 1 {
		t.Fatalf("result's workflow %+v: want one setup request and one teardown request", wf)
	}
}
