package report

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
	"github.com/stampede-load/stampede/internal/sample"
)

// neverSentRun: the login step always failed, so the iterations ended there
// and the steps after it were never sent; another scenario's step was
// never sent with nothing failing before it.
func neverSentRun(t *testing.T) *result.Result {
	return build(t, result.Result{
		Plan: result.PlanInfo{Name: "shop", File: "shop.yaml", Target: "http://127.0.0.1:8080"},
		Run:  result.RunInfo{DurationS: 10, Model: "closed"},
	},
		stepSpec{scenario: "buyer", name: "POST login", fails: []failure{{class: sample.ClientError, n: 40, lat: dist{ms, 2 * ms, 1}}}},
		stepSpec{scenario: "buyer", name: "GET cart"},
		stepSpec{scenario: "buyer", name: "POST order"},
		stepSpec{scenario: "browser", name: "GET /", ok: 50, okLat: dist{ms, 3 * ms, 1}},
		stepSpec{scenario: "browser", name: "GET /rare"},
	)
}

// TestJUnitNeverSentIsSkipped: a step with no requests did not pass; it
// is skipped, says it was never sent and, when earlier steps of its
// scenario failed, that this is why; the suite counts it as skipped.
func TestJUnitNeverSentIsSkipped(t *testing.T) {
	out := junitOf(t, neverSentRun(t))
	var doc struct {
		Skipped int `xml:"skipped,attr"`
		Suites  []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := doc.Suites[0]
	// The document carries no skipped count: the Jenkins schema allows
	// one on a suite only.
	if s.Tests != 5 || s.Failures != 1 || s.Skipped != 3 || doc.Skipped != 0 {
		t.Errorf("tests %d failures %d skipped %d (on <testsuites>: %d), want 5, 1, 3, none\n%s", s.Tests, s.Failures, s.Skipped, doc.Skipped, out)
	}
	for _, c := range s.Cases {
		switch c.Name {
		case "buyer/GET cart", "buyer/POST order":
			if c.Skipped == nil || c.Failure != nil || !strings.Contains(c.Skipped.Message, "never sent") ||
				!strings.Contains(c.Skipped.Message, "earlier steps of scenario buyer failed (POST login: 40 of 40)") {
				t.Errorf("%s: %+v\n%s", c.Name, c, out)
			}
		case "browser/GET /rare":
			if c.Skipped == nil || !strings.Contains(c.Skipped.Message, "never sent") || strings.Contains(c.Skipped.Message, "failed") {
				t.Errorf("%s: %+v", c.Name, c)
			}
		case "browser/GET /":
			if c.Skipped != nil || c.Failure != nil {
				t.Errorf("%s: %+v", c.Name, c)
			}
		}
	}
	if strings.Contains(string(out), "0 requests, 0 ok, 0 failed (100% ok)") {
		t.Errorf("a step never sent reads as all ok:\n%s", out)
	}
}

// TestJUnitNeverSentByJunitparser: the same, as junitparser reads it.
func TestJUnitNeverSentByJunitparser(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import junitparser").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 with junitparser is missing (.ci/services.sh installs it)")
		}
		t.Skip("skipping: python3 with the junitparser package is not installed (pip install junitparser)")
	}
	path := filepath.Join(t.TempDir(), "run.xml")
	os.WriteFile(path, junitOf(t, neverSentRun(t)), 0o644)
	const script = `
import json, sys
from junitparser import JUnitXml
xml = JUnitXml.fromfile(sys.argv[1])
out = {"skipped": xml.skipped, "suites": []}
for suite in xml:
    cases = {c.name: [{"kind": type(r).__name__, "message": r.message} for r in c.result] for c in suite}
    out["suites"].append({"tests": suite.tests, "failures": suite.failures, "skipped": suite.skipped, "cases": cases})
print(json.dumps(out))
`
	got, err := exec.Command(py, "-c", script, path).Output()
	if err != nil {
		t.Fatalf("junitparser could not read the file: %v", err)
	}
	var doc struct {
		Skipped int
		Suites  []struct {
			Tests, Failures, Skipped int
			Cases                    map[string][]struct{ Kind, Message string }
		}
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if len(doc.Suites) != 1 || doc.Skipped != 3 {
		t.Fatalf("junitparser: %s", got)
	}
	s := doc.Suites[0]
	if s.Tests != 5 || s.Failures != 1 || s.Skipped != 3 {
		t.Errorf("junitparser counts: %s", got)
	}
	cart := s.Cases["buyer/GET cart"]
	if len(cart) != 1 || cart[0].Kind != "Skipped" || !strings.Contains(cart[0].Message, "never sent") {
		t.Errorf("buyer/GET cart as junitparser reads it: %s", got)
	}
	if ok := s.Cases["browser/GET /"]; len(ok) != 0 {
		t.Errorf("a step that ran and passed has a result: %s", got)
	}
}
