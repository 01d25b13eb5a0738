package e2e

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stampede-load/stampede/internal/e2etest"
)

// TestSameNamedStepsAndNeverSentSteps, through the binary: two unnamed
// steps to one path are two series in Prometheus, each with its own
// count; a step after one that always fails is never sent, and the JUnit
// report says so as a skipped case instead of a pass.
func TestSameNamedStepsAndNeverSentSteps(t *testing.T) {
	prom := startPrometheus(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer target.Close()
	planPath := e2etest.WritePlan(t, fmt.Sprintf(`
name: steps
target: %s
scenarios:
  browser:
    steps:
      - get: /items
      - get: /items?page=2
      - get: /items
      - think: 50ms
  buyer:
    steps:
      - post: /login
      - get: /cart
      - think: 50ms
load:
  stages:
    - {duration: 3s, users: 2}
`, target.URL), nil)
	dir := filepath.Dir(planPath)
	res, junit := filepath.Join(dir, "r.json"), filepath.Join(dir, "junit.xml")
	out := e2etest.Stampede(t, 90*time.Second, "", "run", planPath, "-o", res, "-q",
		"--output", "prometheus-rw="+prom+"/api/v1/write", "--junit", junit)
	if out.Code != 0 {
		t.Fatalf("run: %s", out)
	}
	r := e2etest.ReadResult(t, res)
	var same []int64
	var name string
	for _, s := range r.Steps {
		if s.Scenario == "browser" && strings.HasPrefix(s.Name, "GET /items") && !strings.Contains(s.Name, "page") {
			same = append(same, s.Requests)
			name = s.Name
		}
	}
	if len(same) != 2 || same[0] == 0 || same[1] == 0 {
		t.Fatalf("want two browser steps of one name with requests, got %v in %+v", same, r.Steps)
	}
	got := promQuery(t, prom, fmt.Sprintf(`stampede_requests_total{plan="steps",scenario="browser",step=%q}`, name))
	if len(got) != 2 || got[0]+got[1] != float64(same[0]+same[1]) {
		t.Errorf("prometheus has %v for the two %q steps, the result %v", got, name, same)
	}

	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			// The Jenkins schema allows skipped on a suite only.
			Skipped int `xml:"skipped,attr"`
			Cases   []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(doc.Suites) != 1 || doc.Suites[0].Skipped != 1 {
		t.Fatalf("%d suites, want 1 with skipped 1:\n%s", len(doc.Suites), b)
	}
	for _, c := range doc.Suites[0].Cases {
		if !strings.HasPrefix(c.Name, "buyer/") {
			continue
		}
		switch {
		case strings.Contains(c.Name, "/login"):
			if c.Failure == nil {
				t.Errorf("%s: no failure:\n%s", c.Name, b)
			}
		case strings.Contains(c.Name, "/cart"):
			if c.Skipped == nil || !strings.Contains(c.Skipped.Message, "never sent: earlier steps of scenario buyer failed") {
				t.Errorf("%s: not skipped as never sent:\n%s", c.Name, b)
			}
		}
	}
}
