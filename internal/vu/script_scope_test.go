package vu

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stampede-load/stampede/internal/httpc"
	"github.com/stampede-load/stampede/internal/metrics"
	"github.com/stampede-load/stampede/internal/plan"
)

// headerServer records, per path, the X-Once header of each request.
func headerServer(t *testing.T) (string, func() map[string][]string) {
	var mu sync.Mutex
	seen := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], r.Header.Get("X-Once")+"|"+r.URL.RawQuery)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() map[string][]string {
		mu.Lock()
		defer mu.Unlock()
		out := map[string][]string{}
		for k, v := range seen {
			out[k] = append([]string(nil), v...)
		}
		return out
	}
}

// TestScriptHeaderOnlyForItsRequest: header() is for the next request
// only: when an if: skips that request the header is dropped, not sent
// with a later request or the next iteration's first.
func TestScriptHeaderOnlyForItsRequest(t *testing.T) {
	base, seen := headerServer(t)
	u, sc, _ := bodyUser(t, t.TempDir(), `
scenarios:
  s:
    steps:
      - get: /first
      - script: |
          header("X-Once", "set-by-script");
      - get: /skipped
        if: iter < 0
      - get: /after
      - script: |
          header("X-Once", "end-of-iteration");
`, base, httpc.Options{})
	iterate(t, u, sc, 2)
	got := seen()
	if len(got["/skipped"]) != 0 || len(got["/first"]) != 2 || len(got["/after"]) != 2 {
		t.Fatalf("requests %v", got)
	}
	for _, path := range []string{"/first", "/after"} {
		for i, h := range got[path] {
			if h != "|" {
				t.Errorf("%s request %d carried X-Once %q: a header for a request not sent", path, i, h)
			}
		}
	}
}

// TestScriptReadsSetupCaptures: a script sees the setup's captures in
// captures, read-only, as templates do.
func TestScriptReadsSetupCaptures(t *testing.T) {
	base, seen := headerServer(t)
	p, err := plan.Parse("t.yaml", []byte("target: "+base+`
setup:
  - post: /fixtures
    capture: {fixture: {json: id}}
scenarios:
  s:
    steps:
      - name: copy
        sets: [copied]
        script: |
          if (!("fixture" in captures)) fail("fixture not in captures");
          set("copied", captures.fixture + "/" + Object.keys(captures).sort().join(","));
      - get: "/use?v={{ copied }}"
load: {stages: [{duration: 1s, users: 1}]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := Compile(p, base, "stampede/test", nil)
	if err != nil {
		t.Fatal(err)
	}
	prog.SetGlobals([]string{"f-9"})
	rec := metrics.New(prog.Steps, 1)
	sh := httpc.NewShared(httpc.Options{})
	t.Cleanup(sh.Close)
	u := prog.NewUser(1, sh.NewTransport(), rec)
	t.Cleanup(u.Close)
	iterate(t, u, prog.ScenarioFor(0), 1)
	if got := seen()["/use"]; len(got) != 1 || got[0] != "|v=f-9%2Fcopied%2Cfixture" {
		t.Fatalf("requests %v, errors %v", seen(), rec.Snapshot().Steps[0].Errors)
	}
}
