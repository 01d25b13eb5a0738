package report

import (
	"bytes"
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

func junitOf(t *testing.T, r *result.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func failingRun(t *testing.T) *result.Result {
	r := build(t, result.Result{
		Plan: result.PlanInfo{Name: "scalection", File: "plans/s.yaml", Target: "http://127.0.0.1:8080"},
		Run:  result.RunInfo{DurationS: 12.5, Model: "closed", Partial: true, PartialReason: "interrupted (Ctrl-C)"},
		Thresholds: []result.Threshold{
			{Expr: "p95 < 500ms", Value: "812ms", Pass: false},
			{Expr: "error_rate < 1%", Value: "0.4%", Pass: true},
			{Expr: "POST vote: p99 < 2s", Value: "", Error: "no requests & <nothing> to measure"},
		},
	},
		stepSpec{scenario: "voter", name: "GET parties", ok: 900, okLat: dist{3 * ms, 40 * ms, 2}},
		stepSpec{scenario: "voter", name: "POST vote", ok: 300, okLat: dist{8 * ms, 66 * ms, 2},
			fails: []failure{{class: sample.ClientError, n: 7, lat: dist{ms, 2 * ms, 1}}, {class: sample.Timeout, n: 2, lat: dist{30 * s, 30 * s, 1}}}},
	)
	r.Steps[1].Errors = []result.StepError{{Class: "client_error", Status: 409, Message: `{"error":"voter has already voted"}`, Count: 7}, {Class: "timeout", Message: "no answer within 30s", Count: 2}}
	return r
}

// TestJUnitStructure checks counts, names and messages directly.
func TestJUnitStructure(t *testing.T) {
	out := junitOf(t, failingRun(t))
	var doc junitSuites
	if err := xml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	// run completes + 3 thresholds + 2 steps.
	if s.Tests != 6 || s.Failures != 2 || s.Errors != 2 || doc.Tests != 6 {
		t.Errorf("tests %d failures %d errors %d\n%s", s.Tests, s.Failures, s.Errors, out)
	}
	text := string(out)
	for _, want := range []string{
		`message="p95 &lt; 500ms failed: measured 812ms"`,
		`9 of 309 requests failed (7 client_error, 2 timeout); most often: HTTP 409 {&#34;error&#34;:&#34;voter has already voted&#34;} (7 times)`,
		`message="the run did not complete: interrupted (Ctrl-C)"`,
		`<system-out>measured: 900 requests, 900 ok, 0 failed (100% ok)</system-out>`,
		`classname="stampede.scalection.thresholds"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %s:\n%s", want, text)
		}
	}
}

func TestJUnitLevels(t *testing.T) {
	r := sweep(t, 1, 40)
	var doc junitSuites
	if err := xml.Unmarshal(junitOf(t, r), &doc); err != nil {
		t.Fatal(err)
	}
	// No plan thresholds: one suite per level only.
	if len(doc.Suites) != 3 {
		t.Fatalf("%d suites, want 3", len(doc.Suites))
	}
	if !strings.Contains(doc.Suites[2].Name, "level 3: users 10000") || doc.Suites[2].Failures != 2 || doc.Suites[0].Failures != 0 {
		t.Errorf("suites: %+v", doc.Suites)
	}
}

// TestJUnitReadByJunitparser reads the XML back with junitparser, the
// Python package CI tools use to merge and inspect JUnit reports, so the
// file is checked by a consumer we did not write.
func TestJUnitReadByJunitparser(t *testing.T) {
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
	dir := t.TempDir()
	run := filepath.Join(dir, "run.xml")
	levels := filepath.Join(dir, "levels.xml")
	os.WriteFile(run, junitOf(t, failingRun(t)), 0o644)
	os.WriteFile(levels, junitOf(t, sweep(t, 1, 40)), 0o644)
	const script = `
import json, sys
from junitparser import JUnitXml, Failure, Error
out = []
for path in sys.argv[1:]:
    xml = JUnitXml.fromfile(path)
    for suite in xml:
        cases = []
        for case in suite:
            res = [{"kind": type(r).__name__, "message": r.message} for r in case.result]
            cases.append({"name": case.name, "classname": case.classname, "out": case.system_out, "result": res})
        out.append({"file": path, "suite": suite.name, "tests": suite.tests, "failures": suite.failures, "errors": suite.errors, "cases": cases})
print(json.dumps(out))
`
	got, err := exec.Command(py, "-c", script, run, levels).Output()
	if err != nil {
		t.Fatalf("junitparser could not read the files: %v", err)
	}
	var suites []struct {
		File                    string
		Suite                   string
		Tests, Failures, Errors int
		Cases                   []struct {
			Name, Classname, Out string
			Result               []struct{ Kind, Message string }
		}
	}
	if err := json.Unmarshal(got, &suites); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if len(suites) != 4 {
		t.Fatalf("junitparser saw %d suites, want 1 + 3: %s", len(suites), got)
	}
	s := suites[0]
	if s.Tests != 6 || s.Failures != 2 || s.Errors != 2 || len(s.Cases) != 6 {
		t.Errorf("junitparser counts: %+v", s)
	}
	byName := map[string]int{}
	for i, c := range s.Cases {
		byName[c.Name] = i
	}
	p95 := s.Cases[byName["p95 < 500ms"]]
	if len(p95.Result) != 1 || p95.Result[0].Kind != "Failure" || p95.Result[0].Message != "p95 < 500ms failed: measured 812ms" || p95.Out != "measured: 812ms" {
		t.Errorf("p95 case as junitparser reads it: %+v", p95)
	}
	bad := s.Cases[byName["POST vote: p99 < 2s"]]
	if len(bad.Result) != 1 || bad.Result[0].Kind != "Error" || !strings.Contains(bad.Result[0].Message, "no requests & <nothing>") {
		t.Errorf("threshold error case: %+v", bad)
	}
	if ok := s.Cases[byName["error_rate < 1%"]]; len(ok.Result) != 0 {
		t.Errorf("a passing threshold has a result: %+v", ok)
	}
	vote := s.Cases[byName["voter/POST vote"]]
	if len(vote.Result) != 1 || !strings.HasPrefix(vote.Result[0].Message, "9 of 309 requests failed") {
		t.Errorf("step case: %+v", vote)
	}
	if last := suites[3]; last.Failures != 2 || !strings.Contains(last.Suite, "level 3") {
		t.Errorf("level suite: %+v", last)
	}
}
