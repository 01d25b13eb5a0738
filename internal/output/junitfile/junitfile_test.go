package junitfile

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stampede-load/stampede/internal/result"
)

// element is what the Jenkins xUnit plugin's JUnit schema (junit-10.xsd,
// the one Jenkins validates JUnit input against) allows of an element:
// its attributes, those required, the elements it may hold, and the
// attributes typed SUREFIRE_TIME. The schema cannot be fetched offline,
// so the constraints this writer's output meets are written out here.
type element struct {
	attrs, required, children, times []string
}

var jenkinsJUnit = map[string]element{
	// No skipped (or disabled) on testsuites: only a testsuite carries one.
	"testsuites": {attrs: []string{"name", "time", "tests", "failures", "errors"}, children: []string{"testsuite"}, times: []string{"time"}},
	"testsuite": {
		attrs:    []string{"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
		required: []string{"name", "tests", "failures", "errors"},
		children: []string{"testsuite", "properties", "testcase", "system-out", "system-err"},
		times:    []string{"time"},
	},
	"properties": {children: []string{"property"}},
	"property":   {attrs: []string{"name", "value"}, required: []string{"name", "value"}},
	"testcase": {
		attrs: []string{"name", "time", "classname", "group"}, required: []string{"name"},
		children: []string{"skipped", "error", "failure", "rerunFailure", "rerunError", "flakyFailure", "flakyError", "system-out", "system-err"},
	},
	"failure":    {attrs: []string{"type", "message"}},
	"error":      {attrs: []string{"type", "message"}},
	"skipped":    {attrs: []string{"type", "message"}},
	"system-out": {},
	"system-err": {},
}

// surefireTime is the schema's SUREFIRE_TIME pattern (XSD patterns match
// the whole value).
var surefireTime = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)

// validateJenkins checks doc against jenkinsJUnit, testsuites as the root.
func validateJenkins(doc []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var stack []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		name := se.Name.Local
		if err := placeOK(stack, name); err != nil {
			return err
		}
		if err := attrsOK(name, se.Attr); err != nil {
			return err
		}
		stack = append(stack, name)
		if err := skipToEnd(dec, &stack); err != nil {
			return err
		}
	}
}

// skipToEnd leaves nested elements to the caller's loop: it only pops the
// stack at each end element.
func skipToEnd(dec *xml.Decoder, stack *[]string) error {
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			*stack = (*stack)[:len(*stack)-1]
			if len(*stack) == 0 {
				return nil
			}
		case xml.StartElement:
			if err := placeOK(*stack, t.Name.Local); err != nil {
				return err
			}
			if err := attrsOK(t.Name.Local, t.Attr); err != nil {
				return err
			}
			*stack = append(*stack, t.Name.Local)
		}
	}
}

func placeOK(stack []string, name string) error {
	if len(stack) == 0 {
		if name != "testsuites" {
			return fmt.Errorf("root <%s>, want <testsuites>", name)
		}
		return nil
	}
	parent := stack[len(stack)-1]
	if !slices.Contains(jenkinsJUnit[parent].children, name) {
		return fmt.Errorf("<%s> may not hold <%s>", parent, name)
	}
	return nil
}

func attrsOK(name string, attrs []xml.Attr) error {
	el, known := jenkinsJUnit[name]
	if !known {
		return fmt.Errorf("<%s> is not in the schema", name)
	}
	have := map[string]string{}
	for _, a := range attrs {
		have[a.Name.Local] = a.Value
		if !slices.Contains(el.attrs, a.Name.Local) {
			return fmt.Errorf("<%s> may not carry %s=%q", name, a.Name.Local, a.Value)
		}
		if slices.Contains(el.times, a.Name.Local) && !surefireTime.MatchString(a.Value) {
			return fmt.Errorf("<%s %s=%q>: not a SUREFIRE_TIME", name, a.Name.Local, a.Value)
		}
	}
	for _, r := range el.required {
		if _, ok := have[r]; !ok {
			return fmt.Errorf("<%s> lacks %s", name, r)
		}
	}
	return nil
}

// The validator itself refuses what the schema refuses.
func TestJenkinsConstraintsRefuse(t *testing.T) {
	for _, bad := range []string{
		`<testsuites skipped="1"></testsuites>`,
		`<testsuites><testsuite name="a" tests="1" failures="0"></testsuite></testsuites>`,
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0" time="1s"></testsuite></testsuites>`,
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase classname="x"/></testsuite></testsuites>`,
		`<testsuite name="a" tests="1" failures="0" errors="0"></testsuite>`,
		`<testsuites><testcase name="x"/></testsuites>`,
	} {
		if validateJenkins([]byte(bad)) == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	ok := `<testsuites name="n" time="1,234.5"><testsuite name="a" tests="1" failures="0" errors="0" skipped="0" time="0.125"><properties><property name="p" value="v"/></properties><testcase name="x" classname="c" time="0"><skipped message="m"/><system-out>o</system-out></testcase></testsuite></testsuites>`
	if err := validateJenkins([]byte(ok)); err != nil {
		t.Errorf("refused a valid document: %v", err)
	}
}

// sweepResult is a two-level sweep whose levels have the same SLO and
// steps, one of them never sent, so every kind of case appears twice.
func sweepResult() *result.Result {
	level := func(users float64) result.Level {
		slo := []result.Threshold{{Expr: "p95 < 1s", Value: "12ms", Pass: true}, {Expr: "errors < 1%", Value: "2%", Pass: false}}
		return result.Level{Vary: "users", Value: users, SLO: slo, Result: &result.Result{
			Plan:       result.PlanInfo{Name: "shop.v2", File: "shop.yaml", Target: "http://127.0.0.1:8080"},
			Run:        result.RunInfo{DurationS: 1234.5, Model: "closed"},
			Thresholds: slo,
			Steps: []result.Step{
				{Scenario: "buyer", Name: "GET /", Requests: 100, Successful: 98, Failed: 2, ByClass: map[string]int64{"server_error": 2},
					LatencyAll: result.Latency{AvgUS: 1500}},
				{Scenario: "buyer", Name: "GET /rare"},
			},
		}}
	}
	return &result.Result{
		Plan:   result.PlanInfo{Name: "shop.v2", File: "shop.yaml", Target: "http://127.0.0.1:8080"},
		Run:    result.RunInfo{DurationS: 2469, Model: "closed"},
		Levels: []result.Level{level(10), level(20)},
	}
}

func writeJUnit(t *testing.T, r *result.Result) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "junit.xml")
	s, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The --junit file meets the Jenkins schema. Before, <testsuites> carried
// skipped="N", which that schema does not allow.
func TestJUnitMeetsJenkinsSchema(t *testing.T) {
	doc := writeJUnit(t, sweepResult())
	if err := validateJenkins(doc); err != nil {
		t.Errorf("%v\n%s", err, doc)
	}
}

// Each level's cases are distinct by classname and name, as Surefire and
// junit2html key them; before, both levels' "p95 < 1s" were one case to
// them, the second level's verdict merged into the first's.
func TestJUnitLevelsAreDistinctCases(t *testing.T) {
	doc := writeJUnit(t, sweepResult())
	var parsed struct {
		Suites []struct {
			Cases []struct {
				Name      string `xml:"name,attr"`
				Classname string `xml:"classname,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	seen := map[[2]string]bool{}
	n := 0
	for _, s := range parsed.Suites {
		for _, c := range s.Cases {
			n++
			key := [2]string{c.Classname, c.Name}
			if seen[key] {
				t.Errorf("case classname=%q name=%q appears twice\n%s", c.Classname, c.Name, doc)
			}
			seen[key] = true
		}
	}
	if n != 8 {
		t.Errorf("%d cases, want 8 (2 SLOs and 2 steps in each of 2 levels)\n%s", n, doc)
	}
}
