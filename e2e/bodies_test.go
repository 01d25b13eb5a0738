package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestExamplesBodiesThinkScript runs the examples of think
// distributions, uploads, h2c and script steps through the real binary
// against the demo target. Each plan checks its own effect through the
// demo's answers (upload sizes and SHA-256s, the protocol h2c used, the
// HMAC the script computed, which /auth/signed verifies), so a run with
// requests and no failures means the feature worked end to end.
func TestExamplesBodiesThinkScript(t *testing.T) {
	if testing.Short() {
		t.Skip("each example runs for a few seconds")
	}
	t.Parallel()
	for _, ex := range []struct {
		file  string
		steps []string // scenario/name that must have run
	}{
		{"think-distributions.yaml", []string{"browser/GET parties", "browser/GET count", "poller/GET health"}},
		{"upload.yaml", []string{"uploader/PUT order file", "uploader/PUT order file gzipped", "uploader/POST note upload", "uploader/POST event gzipped"}},
		{"h2c.yaml", []string{"client/POST upload over h2c", "client/GET health"}},
		{"script-sign.yaml", []string{"signer/GET parties", "signer/POST signed"}},
	} {
		t.Run(ex.file, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "r.json")
			o := e2etest.Stampede(t, 60*time.Second, e2etest.ModRoot, "run", "examples/"+ex.file, "-o", out)
			if o.Code != 0 {
				t.Fatalf("want exit 0\n%s", o)
			}
			res := e2etest.ReadResult(t, out)
			checkSums(t, res)
			if res.Totals.Failed != 0 {
				for _, s := range res.Steps {
					for _, e := range s.Errors {
						t.Logf("%s/%s: %d × %s", s.Scenario, s.Name, e.Count, e.Message)
					}
				}
				t.Fatalf("%d failures: %v", res.Totals.Failed, res.Totals.ByClass)
			}
			for _, want := range ex.steps {
				sc, name, _ := strings.Cut(want, "/")
				if st := stepOf(t, res, sc, name); st.Requests == 0 {
					t.Errorf("%s sent no request", want)
				}
			}
		})
	}
}

// TestBadBodyPlansRefused: the binary refuses a plan whose script does
// not compile, naming the place in the plan, and one whose body file is
// missing, before any load (exit 2).
func TestBadBodyPlansRefused(t *testing.T) {
	t.Parallel()
	plan := e2etest.WritePlan(t, `target: demo
scenarios:
  s:
    steps:
      - post: /upload
        body_file: nowhere.bin
      - script: |
          const a = (1 +;
load: {stages: [{duration: 1s, users: 1}]}
`, nil)
	o := e2etest.Stampede(t, 30*time.Second, "", "run", plan)
	if o.Code != 2 {
		t.Fatalf("want exit 2\n%s", o)
	}
	for _, want := range []string{`:6:20: cannot read "nowhere.bin"`, ":8:25: script: Unexpected token ;"} {
		if !strings.Contains(o.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.Stderr)
		}
	}
}
