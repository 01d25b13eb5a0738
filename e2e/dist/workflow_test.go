package dist

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
	"github.com/stampede-load/stampede/internal/result"
)

// fixtures is a target whose setup creates a fixture with a new id each
// time: a setup run again in a worker shows as a second fixture, and that
// worker's load, which must carry the first id, fails.
type fixtures struct {
	mu      sync.Mutex
	created int
	hits    map[string]int
}

func (f *fixtures) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[r.Method+" "+r.URL.Path]++
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/fixtures":
		f.created++
		w.WriteHeader(http.StatusCreated)
		// A long capture, past what one environment variable may hold, goes
		// to the workers in a file.
		fmt.Fprintf(w, `{"id":"f%d","blob":"%s"}`, f.created, strings.Repeat("b", blobLen(r)))
	case r.URL.Path == "/load" && r.Header.Get("X-Fixture") != "f1":
		w.WriteHeader(http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

func blobLen(r *http.Request) int {
	if r.URL.Query().Get("big") != "" {
		return 100 << 10
	}
	return 10
}

func fixturesPlan(url, query string) string {
	return `name: wf-workers
target: ` + url + `
setup:
  - name: create
    post: /fixtures` + query + `
    capture: {fixture: {json: id}, blob: {json: blob}}
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
load:
  stages: [{duration: 1s, rate: 40/s}]
  grace: 1s
`
}

// --workers runs the setup once in the coordinator, hands its captures to
// every worker, and tears down once after them; the merged result shows
// one setup and one teardown.
func TestWorkersRunSetupAndTeardownOnce(t *testing.T) {
	for _, tc := range []struct{ name, query string }{{"env", ""}, {"file", "?big=1"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixtures{hits: map[string]int{}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			dir := t.TempDir()
			plan := filepath.Join(dir, "wf.yaml")
			if err := os.WriteFile(plan, []byte(fixturesPlan(srv.URL, tc.query)), 0o644); err != nil {
				t.Fatal(err)
			}
			o := e2etest.Stampede(t, time.Minute, dir, "run", plan, "-q", "--workers", "3", "-o", "w.json")
			if o.Code != 0 {
				t.Fatalf("exit %d\n%s", o.Code, o)
			}
			f.mu.Lock()
			setups, deletes, load := f.hits["POST /fixtures"], f.hits["DELETE /fixtures/f1"], f.hits["GET /load"]
			f.mu.Unlock()
			if setups != 1 || deletes != 1 {
				t.Errorf("server saw %d setups and %d teardowns of f1 (%v), want one of each for 3 workers", setups, deletes, f.hits)
			}
			res, err := result.Read(filepath.Join(dir, "w.json"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Totals.Requests == 0 || res.Totals.Failed != 0 || int64(load) != res.Totals.Requests {
				t.Errorf("load: %d requests (%d failed), server saw %d: every worker must send the setup's fixture",
					res.Totals.Requests, res.Totals.Failed, load)
			}
			wf := res.Workflow
			if wf == nil || wf.Setup == nil || wf.Teardown == nil || wf.Setup.Requests != 1 || wf.Teardown.Requests != 1 {
				t.Fatalf("merged workflow %+v: want one setup request and one teardown request", wf)
			}
			// The captures file, holding what the setup captured, is gone.
			left, _ := filepath.Glob(filepath.Join(dir, "*.segments", "setup-captures-*"))
			if len(left) != 0 {
				t.Errorf("captures left behind: %v", left)
			}
		})
	}
}
